// The function call benchmark: a call's round trip, REST → gateway → device → REST, at 1 and 64
// concurrent callers, beside the floor: the same request and reply done directly between two
// mqtt.js clients over the local Mosquitto, in the same run (docs/benchmarks.md).
//
//   npm run bench:calls                            embedded store and PostgreSQL, 8 s per row
//   npm run bench:calls -- --store embedded        or postgres, or both
//   npm run bench:calls -- --quick                 3 s per row, one round: a smoke run
//   npm run bench:calls -- --duration 12 --rounds 3 --concurrency 1,16,64
//
// Processes: Skyport (its own process, as an operator starts it), the devices (bench/responder.ts,
// plain mqtt.js, their own process), and the callers (this process). The floor has the same
// shape: requester here, Mosquitto, responders in their own process.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { Pool } from 'undici';
import { ARG, CALL_TIMEOUT_MS, checkAnswer, compare, startResponder, wireCaller, type Call, type Row, type Side } from './call-drive.js';
import {
  DEFAULT_ADMIN_URL, ROOT, api, commandLine, gitCommit, onCleanup, option, runBenchmark, startSkyport, stopChild, userWithProduct,
} from './harness.js';

const USAGE = 'usage: npm run bench:calls -- [--quick] [--store embedded|postgres|both] [--duration S] [--warmup S] [--rounds N] [--concurrency 1,64] [--devices 4] [--route devices|products|both] [--mosquitto mqtt://127.0.0.1:1883] [--pg-admin-url URL] [--client wire|undici|http]';
const { args, quick, stores } = commandLine(USAGE, 'both');
const duration = Number(option(args, 'duration') ?? (quick ? 3 : 8));
const warmup = Number(option(args, 'warmup') ?? 1);
const rounds = Number(option(args, 'rounds') ?? (quick ? 1 : 2));
const concurrencies = (option(args, 'concurrency') ?? '1,64').split(',').map(Number);
/** Devices the callers spread over: one device takes at most 32 calls at once (src/gateway). */
const DEVICES = Number(option(args, 'devices') ?? 4);
const routeArg = option(args, 'route') ?? 'both';
if (!['devices', 'products', 'both'].includes(routeArg)) throw new Error(`--route must be devices, products or both\n${USAGE}`);
const routes = routeArg === 'both' ? ['devices', 'products'] : [routeArg];
const MOSQUITTO = option(args, 'mosquitto') ?? 'mqtt://127.0.0.1:1883';
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
/**
 * The callers' HTTP client. The callers share the machine's cores with the server, the devices
 * and (for the floor) Mosquitto, so their CPU per call moves every rate (docs/benchmarks.md):
 * - `wire` (default): one keep-alive socket per caller, a request written as prepared bytes and
 *   the answer read by its content-length, as autocannon does; the floor's requester is
 *   likewise a lean client (one mqtt.js connection);
 * - `undici`: undici's pool (Node's own fetch engine);
 * - `http`: node:http's Agent.
 */
const CLIENT = option(args, 'client') ?? 'wire';
if (!['wire', 'undici', 'http'].includes(CLIENT)) throw new Error(`--client must be wire, undici or http\n${USAGE}`);
for (const [n, v] of Object.entries({ duration, warmup, rounds, devices: DEVICES })) if (!Number.isFinite(v) || v <= 0) throw new Error(`--${n} must be a positive number\n${USAGE}`);
if (concurrencies.some((c) => !Number.isInteger(c) || c < 1) || Math.max(...concurrencies) > 32 * DEVICES) throw new Error(`--concurrency: whole numbers, at most 32 per device (${32 * DEVICES})`);

const GOAL_P50_MS = 2;
const GOAL_RATE_RATIO = 0.5;

/** Skyport's callers: keep-alive POSTs (undici or node:http, see --client), every answer checked. */
function httpCaller(base: string, path: (id: string) => string, ids: string[], token: string): Call {
  const body = JSON.stringify({ arg: ARG });
  const url = new URL(base);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  if (CLIENT === 'wire') return wireCaller(url, path, ids, headers, body);
  if (CLIENT === 'undici') {
    const pool = new Pool(url.origin, { connections: 256, pipelining: 1, headersTimeout: CALL_TIMEOUT_MS, bodyTimeout: CALL_TIMEOUT_MS });
    onCleanup(() => pool.close());
    return async (w) => {
      const id = ids[w % ids.length] as string;
      const res = await pool.request({ method: 'POST', path: path(id), headers, body });
      const err = checkAnswer(id, res.statusCode, await res.body.text(), `POST ${path(id)}`);
      if (err) throw err;
    };
  }
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return (w) => new Promise<void>((resolve, reject) => {
    const id = ids[w % ids.length] as string;
    const req = request({ agent, host: url.hostname, port: url.port, method: 'POST', path: path(id), headers, timeout: CALL_TIMEOUT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        const err = checkAnswer(id, res.statusCode ?? 0, text, `POST ${path(id)}`);
        if (err) reject(err);
        else resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error(`POST ${path(id)}: no answer within ${CALL_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The floor's caller: one mqtt.js requester; publishes {id,name,arg}, waits for the reply with that id. */
async function rawCaller(prefix: string): Promise<{ call: Call; close(): Promise<void> }> {
  const c = await mqtt.connectAsync(MOSQUITTO, { clientId: `${prefix.replace(/\//g, '-')}-requester`, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4 });
  (c.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);
  const pending = new Map<string, { resolve(): void; reject(err: Error): void; timer: NodeJS.Timeout }>();
  c.on('message', (_topic, payload) => {
    const r = JSON.parse(payload.toString()) as { id: string; return_value: number };
    const p = pending.get(r.id);
    if (!p) return;
    pending.delete(r.id);
    clearTimeout(p.timer);
    if (r.return_value === ARG.length) p.resolve();
    else p.reject(new Error(`floor: wrong return_value ${JSON.stringify(r)}`));
  });
  c.on('close', () => { for (const p of pending.values()) p.reject(new Error('floor: the requester lost its connection')); });
  await c.subscribeAsync(`${prefix}/+/res`, { qos: 0 });
  let n = 0;
  return {
    call: (w) => new Promise<void>((resolve, reject) => {
      const id = `${w}-${n++}`;
      const timer = setTimeout(() => { pending.delete(id); reject(new Error(`floor: no reply within ${CALL_TIMEOUT_MS / 1000} s`)); }, CALL_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      c.publish(`${prefix}/${w % DEVICES}/req`, JSON.stringify({ id, name: 'echo', arg: ARG }));
    }),
    close: () => c.endAsync(),
  };
}

function mosquittoPid(): number | undefined {
  if (!['127.0.0.1', 'localhost'].includes(new URL(MOSQUITTO).hostname)) return undefined;
  try {
    return Number(execFileSync('pgrep', ['-o', '-x', 'mosquitto'], { encoding: 'utf8' }).trim()) || undefined;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const load0 = loadavg();
  console.log(`Function call benchmark: stores ${stores.join(', ')}; callers ${concurrencies.join(', ')}; ${DEVICES} devices; ${warmup} s warm-up + ${rounds} × ${duration / rounds} s per row; ${cpus().length} cores, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);

  // The floor's responders, on the local Mosquitto; topics of this run only.
  const prefix = `bench-calls/${randomBytes(4).toString('hex')}`;
  const rawResponders = await startResponder({ mode: 'raw', mqttUrl: MOSQUITTO, prefix, devices: Array.from({ length: DEVICES }, () => ({ id: '', secret: '' })) });
  const raw = await rawCaller(prefix);
  onCleanup(() => raw.close().catch(() => undefined));
  await raw.call(0); // checked: a wrong return_value rejects
  const floor: Side = { side: 'floor', scenario: 'raw MQTT request/reply over Mosquitto (floor)', store: null, call: raw.call, pids: { server: mosquittoPid(), devices: rawResponders.pid } };

  const rows: Row[] = [];
  for (const store of stores) {
    console.log(`skyport on the ${store} store:`);
    const sky = await startSkyport(store, { adminUrl: ADMIN });
    const { token, productId } = await userWithProduct(sky.url, 'function calls');
    const devices: Array<{ id: string; secret: string }> = [];
    for (let i = 0; i < DEVICES; i++) {
      const d = await api<{ id: string; device_secret: string }>(`${sky.url}/v1/devices`, { token, json: { product_id: productId } });
      devices.push({ id: d.id, secret: d.device_secret });
    }
    const responder = await startResponder({ mode: 'skyport', mqttUrl: `mqtt://${sky.mqttHost}:${sky.mqttPort}`, devices });
    const ids = devices.map((d) => d.id);
    const pids = { server: sky.pid, devices: responder.pid };
    const sides: Side[] = [floor];
    if (routes.includes('devices')) sides.push({ side: 'skyport', scenario: 'Skyport POST /v1/devices/:id/echo', store, call: httpCaller(sky.url, (id) => `/v1/devices/${id}/echo`, ids, token), pids });
    if (routes.includes('products')) sides.push({ side: 'skyport', scenario: 'Skyport POST /v1/products/:p/devices/:id/echo', store, call: httpCaller(sky.url, (id) => `/v1/products/${productId}/devices/${id}/echo`, ids, token), pids });
    // Checked before measuring: every device answers with the right return_value, on every route.
    for (const s of sides) for (let w = 0; w < DEVICES; w++) await s.call(w);
    rows.push(...await compare(store, sides, { concurrencies, warmup, duration, rounds }, 'floor'));
    await responder.stop();
    await stopChild(sky.child);
  }
  await rawResponders.stop();

  const load1 = loadavg();
  const fmt = (n: number | string | null | undefined) => (n === null || n === undefined ? '-' : String(n));
  const lines = [
    '| scenario | store | callers | calls/s | p50 ms | p99 ms | rate ÷ floor | p50 ÷ floor | server/broker CPU µs per call | devices µs | callers µs |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.scenario} | ${r.store ?? '-'} | ${r.concurrency} | ${r.rate} | ${r.p50} | ${r.p99} | ${r.side === 'floor' ? '1.00' : fmt(r.rateRatio?.toFixed(2))} | ${r.side === 'floor' ? '1.00' : fmt(r.p50Ratio?.toFixed(2))} | ${fmt(r.serverUsPerCall)} | ${fmt(r.devicesUsPerCall)} | ${r.callersUsPerCall} |`),
  ];
  const goals = rows.filter((r) => r.side === 'skyport').flatMap((r) => [
    ...(r.concurrency === 1 ? [{ goal: `p50 < ${GOAL_P50_MS} ms at 1 caller, ${r.scenario.replace(/^Skyport /, '')}`, store: r.store, value: `${r.p50} ms`, met: r.p50 < GOAL_P50_MS }] : []),
    ...(r.concurrency === 64 ? [{ goal: `rate >= ${GOAL_RATE_RATIO} x floor at 64 callers, ${r.scenario.replace(/^Skyport /, '')}`, store: r.store, value: `${r.rateRatio}`, met: (r.rateRatio ?? 0) >= GOAL_RATE_RATIO }] : []),
  ]);
  const commit = gitCommit();
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, callers on ${{ wire: 'bare sockets', undici: 'undici', http: 'node:http' }[CLIENT]}, load average ${load0[0]?.toFixed(2)} before, ${load1[0]?.toFixed(2)} after\n\n${lines.join('\n')}\n`);
  for (const g of goals) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal} [${g.store}]: ${g.value}`);

  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `device-calls-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:calls', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: load1 },
    options: { stores, routes, duration, warmup, rounds, concurrencies, devices: DEVICES, mosquitto: MOSQUITTO, arg: ARG, client: CLIENT },
    rows, goals,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
}

runBenchmark('bench:calls', 10 * 60, main);
