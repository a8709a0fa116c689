// The webhook benchmark (docs/benchmarks.md, "Webhooks"): device events in over MQTT, webhook
// deliveries out over HTTP, measured at the receiver, beside a bare undici loop posting the same
// requests to the same receiver in the same run.
//
//   npm run bench:webhooks                          embedded store and PostgreSQL, every phase
//   npm run bench:webhooks -- --store postgres      one store: embedded, postgres or both
//   npm run bench:webhooks -- --quick               short phases and a 10 s outage: a smoke run
//   npm run bench:webhooks -- --outage 20 --outage-mode refuse --phases outage
//   npm run bench:webhooks -- --probe               also a CPU profile of the server per phase
//
// Phases, per store:
// 1. throughput: devices publish as fast as their PUBACKs come (a window per device); deliveries
//    counted at the receiver over the measured seconds, against the bare loop's rate (same
//    receiver, same request size and headers, as many requests at once as Skyport sends to one
//    host: WEBHOOK_HOST_CONCURRENCY's default). In --rounds pairs, the bare loop and then
//    Skyport, each pair's ratio of its own; the figure is the median pair's.
// 2. latency: 1,000 events/s, paced; publish-to-receipt percentiles, against the bare loop's
//    send-to-receipt percentiles at the same rate.
// 3. outage: two webhooks on the same events, A (127.0.0.1) and B (127.0.0.2), at 1,000 events/s:
//    both healthy, then A down (503 or refusing connections) for --outage seconds, then back.
//    B's p99 in each phase; A's backlog drain time; every acknowledged event received by both.
//
// Processes: Skyport (compiled dist/, as an operator starts it, its own process), the devices
// (bench/hook-devices.ts, plain mqtt.js) and the receivers (bench/hook-receiver.ts, node:http)
// in processes of their own, and the bare loop in this one.
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Agent, request } from 'undici';
import {
  DEFAULT_ADMIN_URL, ROOT, api, commandLine, cpuSeconds, gitCommit, onCleanup, option, round2, runBenchmark, sleep, startSkyport, stopChild,
  userWithProduct, type Skyport, type Store,
} from './harness.js';
import { startCommandChild, type CommandChild } from './command-child.js';
import { attachProbe, type PhaseProbe, type Probe } from './probe.js';

const USAGE = 'usage: npm run bench:webhooks -- [--quick] [--store embedded|postgres|both] [--phases throughput,latency,outage] [--duration S] [--rounds N] [--latency-duration S] [--healthy S] [--paced-warmup S] [--outage S] [--outage-mode 503|refuse] [--rate 1000] [--devices 8] [--window 32] [--concurrency 32] [--data-bytes 128] [--devices-nice 19] [--probe] [--pg-admin-url URL]';
const { args, quick, stores } = commandLine(USAGE, 'both');
const PHASES = (option(args, 'phases') ?? 'throughput,latency,outage').split(',');
if (PHASES.some((p) => !['throughput', 'latency', 'outage'].includes(p))) throw new Error(`--phases: throughput, latency, outage\n${USAGE}`);
const DURATION = Number(option(args, 'duration') ?? (quick ? 4 : 10));
/**
 * Throughput is measured in this many pairs (the bare loop, then Skyport), each pair's ratio of
 * its own, and the median pair's counts: on two shared cores the bare loop's rate moved from
 * 9,300 to 16,000 requests/s between phases a few minutes apart, so one pair's ratio said as
 * much about the machine's minute as about Skyport (docs/benchmarks.md, "Webhooks").
 */
const ROUNDS = Number(option(args, 'rounds') ?? (quick ? 1 : 3));
const LATENCY_DURATION = Number(option(args, 'latency-duration') ?? (quick ? 5 : 20));
const OUTAGE = Number(option(args, 'outage') ?? (quick ? 10 : 60));
const HEALTHY = Number(option(args, 'healthy') ?? Math.min(OUTAGE, 30));
/** Paced phases start measuring after this: the first seconds after an idle spell are slower (connections opened again, code not yet optimised). */
const PACED_WARMUP = Number(option(args, 'paced-warmup') ?? (quick ? 1 : 5));
const OUTAGE_MODE = option(args, 'outage-mode') ?? '503';
if (!['503', 'refuse'].includes(OUTAGE_MODE)) throw new Error(`--outage-mode must be 503 or refuse\n${USAGE}`);
const RATE = Number(option(args, 'rate') ?? 1000);
const DEVICES = Number(option(args, 'devices') ?? 8);
const WINDOW = Number(option(args, 'window') ?? 32);
/** The bare loop's requests at once: what Skyport sends to one host at once by default (WEBHOOK_HOST_CONCURRENCY). */
const CONCURRENCY = Number(option(args, 'concurrency') ?? 32);
const DATA_BYTES = Number(option(args, 'data-bytes') ?? 128);
/**
 * The devices' CPU priority (`nice`), lowest by default, as bench/run.ts's flooder: real devices
 * publish from elsewhere, and on two shared cores devices at full priority took the CPU that
 * delivery needed, so the phase measured their share of the machine more than Skyport's pipeline.
 */
const DEVICES_NICE = Number(option(args, 'devices-nice') ?? 19);
const PROBE = args.includes('--probe');
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
for (const [n, v] of Object.entries({ duration: DURATION, rounds: ROUNDS, 'latency-duration': LATENCY_DURATION, outage: OUTAGE, healthy: HEALTHY, 'paced-warmup': PACED_WARMUP, rate: RATE, devices: DEVICES, window: WINDOW, concurrency: CONCURRENCY, 'data-bytes': DATA_BYTES })) {
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${n} must be a positive number\n${USAGE}`);
}
if (!Number.isInteger(ROUNDS)) throw new Error(`--rounds: a whole number\n${USAGE}`);
if (!Number.isInteger(DEVICES_NICE) || DEVICES_NICE < 0 || DEVICES_NICE > 19) throw new Error(`--devices-nice: 0 to 19\n${USAGE}`);
if (DATA_BYTES > 600) throw new Error('--data-bytes: at most 600 (a device event\'s data limit is 622 bytes)');

const EVENT = 'bench/hook';
/** Unacknowledged events a device holds at most when paced: past it the pacer falls behind, and says so. */
const PACE_WINDOW = 1000;
const WARMUP_MS = 1000;
/** How long the events of a phase may take to arrive once publishing stopped (the outage's drain has its own bound). */
const SETTLE_MS = 180_000;
/** The outage's drain: the retry schedule's steps reach 5 minutes after three failed attempts (src/services/webhooks/schedule.ts). */
const DRAIN_BOUND_MS = 15 * 60_000;

const GOAL_THROUGHPUT_RATIO = 0.5;
const GOAL_P99_MS = 50;
const GOAL_HEALTHY_P99_RATIO = 2;

const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// The child processes: commands over IPC, answered by `seq`.

type Child = CommandChild;
const startChild = (file: string, name: string, nice = 0) => startCommandChild(file, name, (err) => { failure ??= err; }, { nice });

/** A child that dies during the run (a device's connection lost) fails it at the next check. */
let failure: Error | undefined;
function check(): void {
  if (failure) throw failure;
}

type Ranges = Array<[number, number]>;
interface Mark { at: number; ranges: Ranges; published: number; puback: { count: number; p50: number | null; p99: number | null; max: number | null }; behindMs: number }
interface Stats { timeline?: Array<[number, number]>; count: number; first: number | null; last: number | null; p50: number | null; p90: number | null; p99: number | null; max: number | null; requests: number; verified: number; badSignatures: number; badBodies: number }
interface Missing { expected: number; missing: number; duplicates: number; firstMissing: number | null }

/** The ids acknowledged between two marks, per device. */
const between = (a: Mark, b: Mark): Ranges => b.ranges.map(([, end], k) => [(a.ranges[k] as [number, number])[1], end]);
const count = (r: Ranges) => r.reduce((n, [s, e]) => n + e - s, 0);

// ---------------------------------------------------------------------------------------------
// The bare loop: undici, the same requests Skyport makes, to the same receiver.

interface Sample { headers: Record<string, string>; body: string }

/**
 * Requests like the sample Skyport's delivery made: the same headers (names, and values of the
 * same length), the same form fields with data of the same size, a fresh id and a real signature.
 */
function bareRequests(sample: Sample, secret: string, base: number) {
  const fields = new URLSearchParams(sample.body);
  const skip = new Set(['host', 'content-length', 'connection', 'transfer-encoding']);
  const headers = Object.fromEntries(Object.entries(sample.headers).filter(([k]) => !skip.has(k)));
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const dataLength = (fields.get('data') ?? '').length;
  let n = 0;
  return (): { headers: Record<string, string>; body: string } => {
    const i = base + n++;
    const t = now();
    const head = JSON.stringify({ i, t, p: '' });
    fields.set('data', JSON.stringify({ i, t, p: 'x'.repeat(Math.max(0, dataLength - head.length)) }));
    const body = fields.toString();
    const id = `msg_${randomBytes(12).toString('hex')}`.slice(0, (headers['webhook-id'] ?? '').length || 28);
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
    return { headers: { ...headers, 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` }, body };
  };
}

function bareSender(url: string, make: ReturnType<typeof bareRequests>) {
  const agent = new Agent({ connections: CONCURRENCY });
  onCleanup(() => agent.close());
  return async () => {
    const r = make();
    const res = await request(url, { method: 'POST', headers: r.headers, body: r.body, dispatcher: agent });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`bare loop: ${res.statusCode} from ${url}`);
  };
}

/** CONCURRENCY loops, each posting as soon as its previous answer came, until `until`. */
async function bareFlood(send: () => Promise<void>, until: number): Promise<void> {
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (now() < until) await send();
  }));
}

/** RATE requests a second (a 1 ms timer), until `until`. */
async function barePaced(send: () => Promise<void>, until: number): Promise<void> {
  const started = now();
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      const t = now();
      if (t >= until) {
        clearInterval(timer);
        resolve();
        return;
      }
      const due = Math.floor(((t - started) * RATE) / 1000);
      for (; sent < due; sent++) {
        const p = send().catch((err: unknown) => { clearInterval(timer); reject(err); });
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
    }, 1);
  });
  await Promise.all(inFlight);
}

// ---------------------------------------------------------------------------------------------
// Readings.

/** CPU seconds of the server and of the PostgreSQL backends of its database, from now on. */
async function cpuMeter(sky: Skyport): Promise<() => Promise<{ server: number | null; postgres: number | null }>> {
  const backends = async (): Promise<Map<number, number> | null> => {
    if (!sky.databaseUrl) return null;
    const name = new URL(sky.databaseUrl).pathname.slice(1);
    const c = new pg.Client({ connectionString: ADMIN });
    await c.connect();
    try {
      const pids = (await c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).rows.map((r) => r.pid);
      return new Map(pids.map((p) => [p, cpuSeconds(p) ?? 0]));
    } finally {
      await c.end();
    }
  };
  const server0 = cpuSeconds(sky.pid);
  const pg0 = await backends();
  return async () => {
    const server1 = cpuSeconds(sky.pid);
    const pg1 = await backends();
    return {
      server: server0 === null || server1 === null ? null : round2(server1 - server0),
      postgres: pg0 && pg1 ? round2([...pg1].reduce((a, [p, s]) => a + s - (pg0.get(p) ?? 0), 0)) : null,
    };
  };
}

/** Polls until every id of `ranges` reached the receiver's path; resolves with when (ms) and the last reading. */
async function arrived(receivers: Child, name: string, path: string, ranges: Ranges, boundMs: number, every = 250): Promise<{ at: number | null; last: Missing }> {
  const deadline = now() + boundMs;
  for (;;) {
    check();
    const m = await receivers.call<Missing>({ cmd: 'missing', name, path, ranges });
    if (m.missing === 0) return { at: now(), last: m };
    if (now() > deadline) return { at: null, last: m };
    await sleep(every);
  }
}

const loads = () => loadavg().map((l) => round2(l));

// ---------------------------------------------------------------------------------------------
// One store.

interface ThroughputRow { store: Store; rounds?: Array<{ bare: number; skyport: number; ratio: number }>; bare: { rate: number; requests: number }; skyport: { rate: number; delivered: number; publishedRate: number; drainRate: number | null; overallRate: number | null; puback: Mark['puback']; settleSeconds: number | null; missing: number; duplicates: number }; ratio: number; cpu: { server: number | null; postgres: number | null; serverUsPerDelivery: number | null }; load: number[]; probe?: PhaseProbe }
interface LatencyRow { store: Store; bare: Stats; skyport: Stats; publishedRate: number; puback: Mark['puback']; behindMs: number; p50Ratio: number | null; p99Ratio: number | null; missing: number; duplicates: number; cpu: { server: number | null; postgres: number | null }; load: number[]; probe?: PhaseProbe }
interface OutageRow {
  store: Store; mode: string; outageSeconds: number;
  healthy: { a: Stats; b: Stats };
  outage: { a: Stats; b: Stats };
  recovery: { b: Stats };
  bP99Ratio: number | null;
  backlogAtRecovery: number;
  /** A's failing_since in the API once its backlog is delivered (null: cleared by its successes). */
  aFailingSinceAfter: string | null;
  drainSeconds: number | null;
  firstReceiptAfterRecoverySeconds: number | null;
  a: Missing; b: Missing;
  published: number;
  puback: { healthy: Mark['puback']; outage: Mark['puback']; drain: Mark['puback'] };
  /** Events published per second in each phase (the pacer falls behind when PUBACKs do not come). */
  publishedRate: { healthy: number; outage: number; drain: number };
  behindMs: number;
  cpu: { server: number | null; postgres: number | null };
  load: number[];
  probe?: PhaseProbe;
}

async function createWebhook(sky: Skyport, token: string, productId: number, url: string): Promise<{ id: string; secret: string }> {
  return api<{ id: string; secret: string }>(`${sky.url}/v1/products/${productId}/webhooks`, { token, json: { event: EVENT, url } });
}

async function runStore(store: Store, receivers: Child, ports: { a: number; b: number }): Promise<{ throughput?: ThroughputRow; latency?: LatencyRow; outage?: OutageRow }> {
  const sky = await startSkyport(store, {
    adminUrl: ADMIN, build: ROOT, name: `skyport (${store})`,
    // The receivers are on this machine: an operator allows their addresses (docs/webhooks.md, "Safe by default").
    env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1,127.0.0.2' },
    ...(PROBE ? { nodeArgs: ['--inspect=127.0.0.1:0', '--import', join(ROOT, 'bench', 'count-queries.mjs')] } : {}),
  });
  let probe: Probe | undefined;
  if (PROBE) {
    if (!sky.inspectorUrl) throw new Error('--probe: the server printed no inspector address');
    probe = await attachProbe(sky.inspectorUrl);
    onCleanup(() => probe?.close());
  }
  const profiled = async (phase: string) => probe?.stop(join(ROOT, 'bench', 'results', `webhooks-${store}-${phase}-${Date.now()}.cpuprofile`));

  const { token, productId } = await userWithProduct(sky.url, 'webhooks');
  const identities: Array<{ id: string; secret: string }> = [];
  for (let i = 0; i < DEVICES; i++) {
    const d = await api<{ id: string; device_secret: string }>(`${sky.url}/v1/devices`, { token, json: { product_id: productId } });
    identities.push({ id: d.id, secret: d.device_secret });
  }
  const prefix = `/${store}`;
  const hookPath = `${prefix}/hook`;
  const barePath = `${prefix}/bare`;
  const hook = await createWebhook(sky, token, productId, `http://127.0.0.1:${ports.a}${hookPath}`);
  await receivers.call({ cmd: 'secret', name: 'a', path: hookPath, secret: hook.secret });
  await receivers.call({ cmd: 'secret', name: 'a', path: barePath, secret: hook.secret });

  const devices = await startChild('hook-devices.ts', 'devices', DEVICES_NICE);
  await devices.call({ cmd: 'setup', mqttUrl: `mqtt://${sky.mqttHost}:${sky.mqttPort}`, devices: identities, event: EVENT, dataBytes: DATA_BYTES });

  // Warm-up, and the sample the bare loop copies: a few events through the whole path, each checked.
  const m0 = await devices.call<Mark>({ cmd: 'mark' });
  await devices.call({ cmd: 'pace', rate: 200, window: PACE_WINDOW });
  await sleep(2000);
  const m1 = await devices.call<Mark>({ cmd: 'stop' });
  const warm = await arrived(receivers, 'a', hookPath, between(m0, m1), 30_000);
  if (warm.at === null) throw new Error(`warm-up: ${warm.last.missing} of ${warm.last.expected} events never reached the receiver`);
  const sample = await receivers.call<Sample | null>({ cmd: 'sample', name: 'a', path: hookPath });
  if (!sample) throw new Error('warm-up: the receiver kept no request');
  const ws = await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: hookPath });
  if (ws.verified === 0 || ws.badSignatures > 0 || ws.badBodies > 0) throw new Error(`warm-up: signatures verified ${ws.verified}, wrong ${ws.badSignatures}, bodies unreadable ${ws.badBodies}`);
  console.log(`  warm-up: ${warm.last.expected} events delivered; a delivery is ${Buffer.byteLength(sample.body)} bytes of body and ${Object.keys(sample.headers).length} headers (${Object.keys(sample.headers).join(', ')})`);
  const bare = bareSender(`http://127.0.0.1:${ports.a}${barePath}`, bareRequests(sample, hook.secret, 900_000_000 + stores.indexOf(store) * 10_000_000));
  const out: { throughput?: ThroughputRow; latency?: LatencyRow; outage?: OutageRow } = {};

  /** One pair of the throughput phase: the bare loop's rate, then Skyport's, measured the same way. */
  const throughputRound = async (round: string): Promise<ThroughputRow> => {
    // The bare loop: the same receiver, path and request, CONCURRENCY at once.
    const b0 = now() + WARMUP_MS;
    const b1 = b0 + DURATION * 1000;
    await bareFlood(bare, b1);
    const bs = await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: barePath, from: b0, to: b1 });
    const bareRate = Math.round(bs.count / DURATION);
    console.log(`  throughput ${round}, bare undici loop (${CONCURRENCY} at once): ${bareRate} requests/s`);

    const start = await devices.call<Mark>({ cmd: 'mark' });
    await devices.call({ cmd: 'flood', window: WINDOW });
    await sleep(WARMUP_MS);
    const t0 = await devices.call<Mark>({ cmd: 'mark' });
    const cpu = await cpuMeter(sky);
    await probe?.start();
    await sleep(DURATION * 1000);
    const used = await cpu();
    const probed = await profiled(`throughput-${round.replace('/', 'of')}`);
    const t1 = await devices.call<Mark>({ cmd: 'mark' });
    const end = await devices.call<Mark>({ cmd: 'stop' }, 150_000);
    const ss = await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: hookPath, from: t0.at, to: t1.at });
    const settled = await arrived(receivers, 'a', hookPath, between(start, end), SETTLE_MS, 500);
    const seconds = (t1.at - t0.at) / 1000;
    const rate = Math.round(ss.count / seconds);
    // Delivery alone (publishing stopped), and every event from the first publish to the last receipt.
    const drained = settled.at === null ? null : await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: hookPath, from: end.at, to: settled.at + 1000 });
    const drainRate = drained && drained.last !== null && drained.count > 1000 ? Math.round(drained.count / ((drained.last - end.at) / 1000)) : null;
    const overall = settled.at === null ? null : await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: hookPath, from: start.at, to: settled.at + 1000 });
    const overallRate = overall && overall.last !== null ? Math.round(count(between(start, end)) / ((overall.last - start.at) / 1000)) : null;
    const row: ThroughputRow = {
      store,
      bare: { rate: bareRate, requests: bs.count },
      skyport: {
        rate, delivered: ss.count, publishedRate: Math.round((t1.published - t0.published) / seconds), drainRate, overallRate, puback: t1.puback,
        settleSeconds: settled.at === null ? null : round2((settled.at - end.at) / 1000), missing: settled.last.missing, duplicates: settled.last.duplicates,
      },
      ratio: round2(rate / bareRate),
      cpu: { ...used, serverUsPerDelivery: used.server === null || ss.count === 0 ? null : Math.round((used.server * 1e6) / ss.count) },
      load: loads(),
      ...(probed ? { probe: probed } : {}),
    };
    console.log(`  throughput ${round}, Skyport: ${rate} deliveries/s (${row.ratio} of the bare loop); devices published ${row.skyport.publishedRate}/s (PUBACK p50 ${t1.puback.p50} ms, p99 ${t1.puback.p99} ms); all ${settled.last.expected} delivered ${row.skyport.settleSeconds ?? 'NOT'} s after publishing stopped (${settled.last.missing} missing, ${settled.last.duplicates} twice); ${drainRate ?? '-'} deliveries/s once publishing stopped (${drainRate ? round2(drainRate / bareRate) : '-'} of the bare loop), ${overallRate ?? '-'}/s from the first publish to the last receipt (${overallRate ? round2(overallRate / bareRate) : '-'}); server ${used.server} s CPU${used.postgres !== null ? `, PostgreSQL ${used.postgres} s` : ''} in ${round2(seconds)} s`);
    return row;
  };

  if (PHASES.includes('throughput')) {
    const rounds: ThroughputRow[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await throughputRound(`${i + 1}/${ROUNDS}`));
    // The median pair stands for the phase (with an even count, the lower of the two middle ones).
    const byRatio = [...rounds].sort((x, y) => x.ratio - y.ratio);
    const median = byRatio[Math.floor((byRatio.length - 1) / 2)] as ThroughputRow;
    out.throughput = {
      ...median,
      rounds: rounds.map((r) => ({ bare: r.bare.rate, skyport: r.skyport.rate, ratio: r.ratio })),
      skyport: { ...median.skyport, missing: rounds.reduce((n, r) => n + r.skyport.missing, 0), duplicates: rounds.reduce((n, r) => n + r.skyport.duplicates, 0) },
    };
    if (ROUNDS > 1) console.log(`  throughput: ratios ${rounds.map((r) => r.ratio).join(', ')}; the median ${median.ratio}`);
  }

  if (PHASES.includes('latency')) {
    const b0 = now() + PACED_WARMUP * 1000;
    const b1 = b0 + LATENCY_DURATION * 1000;
    await barePaced(bare, b1);
    await sleep(200);
    const bs = await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: barePath, from: b0, to: b1 + 5000 });

    const start = await devices.call<Mark>({ cmd: 'mark' });
    await devices.call({ cmd: 'pace', rate: RATE, window: PACE_WINDOW });
    await sleep(PACED_WARMUP * 1000);
    const t0 = await devices.call<Mark>({ cmd: 'mark' });
    const cpu = await cpuMeter(sky);
    await probe?.start();
    await sleep(LATENCY_DURATION * 1000);
    const used = await cpu();
    const probed = await profiled('latency');
    const t1 = await devices.call<Mark>({ cmd: 'mark' });
    const end = await devices.call<Mark>({ cmd: 'stop' }, 150_000);
    const settled = await arrived(receivers, 'a', hookPath, between(start, end), SETTLE_MS, 500);
    // Receipts of the events published in the measured seconds: those received from t0 on, less the late ones' tail is kept in.
    const ss = await receivers.call<Stats>({ cmd: 'stats', name: 'a', path: hookPath, from: t0.at, to: t1.at, timeline: true });
    const row: LatencyRow = {
      store, bare: bs, skyport: ss, publishedRate: Math.round((t1.published - t0.published) / ((t1.at - t0.at) / 1000)), puback: t1.puback, behindMs: t1.behindMs,
      p50Ratio: ss.p50 !== null && bs.p50 ? round2(ss.p50 / bs.p50) : null,
      p99Ratio: ss.p99 !== null && bs.p99 ? round2(ss.p99 / bs.p99) : null,
      missing: settled.last.missing, duplicates: settled.last.duplicates, cpu: used, load: loads(),
      ...(probed ? { probe: probed } : {}),
    };
    out.latency = row;
    console.log(`  latency at ${RATE}/s: bare loop p50 ${bs.p50} ms, p99 ${bs.p99} ms (${bs.count}); Skyport publish-to-receipt p50 ${ss.p50} ms, p99 ${ss.p99} ms, max ${ss.max} ms (${ss.count} receipts; devices published ${row.publishedRate}/s, PUBACK p50 ${t1.puback.p50} ms, p99 ${t1.puback.p99} ms; pacer late by ${t1.behindMs} ms at most); worst latency in each second: ${(ss.timeline ?? []).map((c) => c[1]).join(' ')}; ${settled.last.missing} missing, ${settled.last.duplicates} twice; server ${used.server} s CPU${used.postgres !== null ? `, PostgreSQL ${used.postgres} s` : ''}`);
  }

  if (PHASES.includes('outage')) {
    // Two webhooks on the same events, at different hosts: A (127.0.0.1) fails, B (127.0.0.2) stays healthy.
    await api(`${sky.url}/v1/products/${productId}/webhooks/${hook.id}`, { method: 'DELETE', token });
    const aPath = `${prefix}/outage-a`;
    const bPath = `${prefix}/outage-b`;
    const a = await createWebhook(sky, token, productId, `http://127.0.0.1:${ports.a}${aPath}`);
    const b = await createWebhook(sky, token, productId, `http://127.0.0.2:${ports.b}${bPath}`);
    await receivers.call({ cmd: 'secret', name: 'a', path: aPath, secret: a.secret });
    await receivers.call({ cmd: 'secret', name: 'b', path: bPath, secret: b.secret });
    const stats = (name: string, path: string, from: number, to: number) => receivers.call<Stats>({ cmd: 'stats', name, path, from, to, timeline: true });

    const start = await devices.call<Mark>({ cmd: 'mark' });
    await devices.call({ cmd: 'pace', rate: RATE, window: PACE_WINDOW });
    await sleep(PACED_WARMUP * 1000);
    const h0 = await devices.call<Mark>({ cmd: 'mark' });
    console.log(`  outage: ${RATE} events/s to A and B, both healthy for ${HEALTHY} s`);
    const cpu = await cpuMeter(sky);
    await sleep(HEALTHY * 1000);
    const h1 = await devices.call<Mark>({ cmd: 'mark' });
    await receivers.call({ cmd: 'mode', name: 'a', mode: OUTAGE_MODE });
    console.log(`  outage: A ${OUTAGE_MODE === '503' ? 'answers 503' : 'refuses connections'} for ${OUTAGE} s`);
    await probe?.start();
    await sleep(OUTAGE * 1000);
    const o1 = await devices.call<Mark>({ cmd: 'mark' });
    await receivers.call({ cmd: 'mode', name: 'a', mode: 'ok' });
    const recovered = now();
    const backlog = await receivers.call<Missing>({ cmd: 'missing', name: 'a', path: aPath, ranges: between(start, o1) });
    console.log(`  outage: A answers again; ${backlog.missing} of its ${backlog.expected} events so far wait for it`);
    const drained = await arrived(receivers, 'a', aPath, between(start, o1), DRAIN_BOUND_MS, 500);
    const probed = await profiled('outage');
    const d1 = await devices.call<Mark>({ cmd: 'mark' });
    const end = await devices.call<Mark>({ cmd: 'stop' }, 150_000);
    const used = await cpu();
    const all = between(start, end);
    const aDone = await arrived(receivers, 'a', aPath, all, SETTLE_MS, 500);
    const bDone = await arrived(receivers, 'b', bPath, all, SETTLE_MS, 500);
    const firstAfter = await stats('a', aPath, recovered, now() + 3600_000);
    // What the API says of A once its backlog is delivered: failing since its outage, or not any more.
    const aView = await api<{ failing_since?: string | null; disabled_reason?: string | null }>(`${sky.url}/v1/products/${productId}/webhooks/${a.id}`, { token });
    const row: OutageRow = {
      store, mode: OUTAGE_MODE, outageSeconds: OUTAGE,
      healthy: { a: await stats('a', aPath, h0.at, h1.at), b: await stats('b', bPath, h0.at, h1.at) },
      outage: { a: await stats('a', aPath, h1.at, o1.at), b: await stats('b', bPath, h1.at, o1.at) },
      recovery: { b: await stats('b', bPath, recovered, drained.at ?? d1.at) },
      bP99Ratio: null,
      backlogAtRecovery: backlog.missing,
      aFailingSinceAfter: aView.failing_since ?? null,
      drainSeconds: drained.at === null ? null : round2((drained.at - recovered) / 1000),
      firstReceiptAfterRecoverySeconds: firstAfter.first === null ? null : round2((firstAfter.first - recovered) / 1000),
      a: aDone.last, b: bDone.last,
      published: count(all),
      puback: { healthy: h1.puback, outage: o1.puback, drain: d1.puback },
      publishedRate: {
        healthy: Math.round((h1.published - h0.published) / ((h1.at - h0.at) / 1000)),
        outage: Math.round((o1.published - h1.published) / ((o1.at - h1.at) / 1000)),
        drain: Math.round((d1.published - o1.published) / ((d1.at - o1.at) / 1000)),
      },
      behindMs: Math.max(h1.behindMs, o1.behindMs, d1.behindMs),
      cpu: used,
      load: loads(),
      ...(probed ? { probe: probed } : {}),
    };
    row.bP99Ratio = row.outage.b.p99 !== null && row.healthy.b.p99 ? round2(row.outage.b.p99 / row.healthy.b.p99) : null;
    out.outage = row;
    const worst = (x: Stats) => (x.timeline ?? []).map((c) => c[1]).join(' ');
    console.log(`  outage: B's worst latency in each second: healthy ${worst(row.healthy.b)}; A down ${worst(row.outage.b)}; A draining ${worst(row.recovery.b)}`);
    console.log(`  outage: PUBACK p50 / p99: healthy ${h1.puback.p50} / ${h1.puback.p99} ms, A down ${o1.puback.p50} / ${o1.puback.p99} ms, A draining ${d1.puback.p50} / ${d1.puback.p99} ms`);
    console.log(`  outage: B p99 ${row.healthy.b.p99} ms healthy, ${row.outage.b.p99} ms during the outage (${row.bP99Ratio}×), ${row.recovery.b.p99} ms while A drains; A drained ${row.drainSeconds ?? 'NOT'} s after it answered again (first delivery after ${row.firstReceiptAfterRecoverySeconds} s); of ${row.published} events A missed ${row.a.missing} (${row.a.duplicates} twice), B missed ${row.b.missing} (${row.b.duplicates} twice); A's failing_since once drained: ${row.aFailingSinceAfter ?? 'none'}; devices published ${row.publishedRate.healthy}/s, ${row.publishedRate.outage}/s, ${row.publishedRate.drain}/s in the three phases; server ${used.server} s CPU${used.postgres !== null ? `, PostgreSQL ${used.postgres} s` : ''}`);
  }

  // Every sampled signature right, every body readable, on every path of this store.
  for (const [name, path] of [['a', hookPath], ['a', barePath], ['a', `${prefix}/outage-a`], ['b', `${prefix}/outage-b`]] as const) {
    const s = await receivers.call<Stats>({ cmd: 'stats', name, path });
    if (s.badSignatures > 0 || s.badBodies > 0) throw new Error(`${name}${path}: ${s.badSignatures} wrong signatures, ${s.badBodies} unreadable bodies of ${s.requests}`);
    if (s.requests > 0) console.log(`  ${name}${path}: ${s.requests} requests, ${s.verified} signatures checked, none wrong`);
  }
  await devices.stop();
  await stopChild(sky.child, 30_000);
  return out;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'run.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm run bench:webhooks does)');
  const date = new Date().toISOString();
  const load0 = loads();
  console.log(`Webhook benchmark: stores ${stores.join(', ')}; phases ${PHASES.join(', ')}; ${DEVICES} devices (window ${WINDOW}, nice ${DEVICES_NICE}), ${DATA_BYTES}-byte event data; bare loop ${CONCURRENCY} at once; ${cpus().length} cores, load average ${load0.join(' ')}`);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });

  const receivers = await startChild('hook-receiver.ts', 'receivers');
  const ports = {
    a: (await receivers.call<{ port: number }>({ cmd: 'listen', name: 'a', host: '127.0.0.1' })).port,
    b: (await receivers.call<{ port: number }>({ cmd: 'listen', name: 'b', host: '127.0.0.2' })).port,
  };

  const results: Array<Awaited<ReturnType<typeof runStore>>> = [];
  for (const store of stores) {
    console.log(`skyport on the ${store} store:`);
    results.push(await runStore(store, receivers, ports));
    check();
  }
  await receivers.stop();

  const load1 = loads();
  const commit = gitCommit();
  const t = results.flatMap((r) => (r.throughput ? [r.throughput] : []));
  const l = results.flatMap((r) => (r.latency ? [r.latency] : []));
  const o = results.flatMap((r) => (r.outage ? [r.outage] : []));
  const lines: string[] = [];
  if (t.length) {
    lines.push('| throughput | store | deliveries/s | bare undici loop req/s | ratio | once publishing stopped: deliveries/s (ratio) | first publish to last receipt: events/s (ratio) | devices published/s | PUBACK p50 / p99 ms | server CPU s (µs/delivery) | PostgreSQL CPU s | lost | load | ratio in each pair |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|');
    for (const r of t) lines.push(`| | ${r.store} | ${r.skyport.rate} | ${r.bare.rate} | ${r.ratio} | ${r.skyport.drainRate ?? '-'} (${r.skyport.drainRate ? round2(r.skyport.drainRate / r.bare.rate) : '-'}) | ${r.skyport.overallRate ?? '-'} (${r.skyport.overallRate ? round2(r.skyport.overallRate / r.bare.rate) : '-'}) | ${r.skyport.publishedRate} | ${r.skyport.puback.p50} / ${r.skyport.puback.p99} | ${r.cpu.server} (${r.cpu.serverUsPerDelivery}) | ${r.cpu.postgres ?? '-'} | ${r.skyport.missing} | ${r.load[0]} | ${(r.rounds ?? []).map((x) => x.ratio).join(', ')} |`);
    lines.push('');
  }
  if (l.length) {
    lines.push(`| latency at ${RATE}/s | store | p50 ms | p99 ms | max ms | bare p50 / p99 ms | p50 ratio | p99 ratio | PUBACK p50 / p99 ms | lost | load |`, '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of l) lines.push(`| | ${r.store} | ${r.skyport.p50} | ${r.skyport.p99} | ${r.skyport.max} | ${r.bare.p50} / ${r.bare.p99} | ${r.p50Ratio} | ${r.p99Ratio} | ${r.puback.p50} / ${r.puback.p99} | ${r.missing} | ${r.load[0]} |`);
    lines.push('');
  }
  if (o.length) {
    lines.push(`| outage (${OUTAGE_MODE}, ${OUTAGE} s) | store | B p99 healthy ms | B p99 during ms | ratio | B p99 while A drains ms | A backlog | A drain s | A lost (twice) | B lost (twice) | load |`, '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of o) lines.push(`| | ${r.store} | ${r.healthy.b.p99} | ${r.outage.b.p99} | ${r.bP99Ratio} | ${r.recovery.b.p99} | ${r.backlogAtRecovery} | ${r.drainSeconds ?? 'not drained'} | ${r.a.missing} (${r.a.duplicates}) | ${r.b.missing} (${r.b.duplicates}) | ${r.load[0]} |`);
  }
  const goals = [
    ...t.map((r) => ({ goal: `throughput >= ${GOAL_THROUGHPUT_RATIO} x the bare loop`, store: r.store, value: String(r.ratio), met: r.ratio >= GOAL_THROUGHPUT_RATIO && r.skyport.missing === 0 })),
    ...l.filter((r) => r.store === 'postgres').map((r) => ({ goal: `p99 <= ${GOAL_P99_MS} ms at ${RATE}/s`, store: r.store, value: `${r.skyport.p99} ms`, met: r.skyport.p99 !== null && r.skyport.p99 <= GOAL_P99_MS && r.missing === 0 })),
    ...o.flatMap((r) => [
      { goal: 'outage: every event received at least once by both webhooks', store: r.store, value: `A ${r.a.missing}, B ${r.b.missing} missing`, met: r.a.missing === 0 && r.b.missing === 0 },
      { goal: `outage: the healthy webhook's p99 <= ${GOAL_HEALTHY_P99_RATIO} x its p99 before`, store: r.store, value: String(r.bP99Ratio), met: r.bP99Ratio !== null && r.bP99Ratio <= GOAL_HEALTHY_P99_RATIO },
    ]),
  ];
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, load average ${load0[0]} before, ${load1[0]} after\n\n${lines.join('\n')}\n`);
  for (const g of goals) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal} [${g.store}]: ${g.value}`);
  for (const [phase, rows] of [['throughput', t], ['latency', l], ['outage', o]] as const) {
    for (const r of rows as Array<{ store: Store; probe?: PhaseProbe }>) {
      if (!r.probe) continue;
      console.log(`\nprobe: ${phase} (${r.store}), ${r.probe.seconds} s profiled, ${r.probe.profile}`);
      console.log(`  by area: ${r.probe.byArea.slice(0, 8).map((x) => `${x.area} ${x.pct}%`).join(', ')}`);
      console.log(`  by self time: ${r.probe.bySelf.slice(0, 10).map((x) => `${x.fn} ${x.pct}%`).join('; ')}`);
      console.log(`  statements: ${r.probe.queries.slice(0, 6).map((q) => `${q.calls}× (${q.rows} rows${q.ms === undefined ? '' : `, ${Math.round(q.ms)} ms`}) ${q.sql.slice(0, 70)}`).join('\n              ')}`);
    }
  }

  const file = join(ROOT, 'bench', 'results', `webhooks-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:webhooks', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: load1 },
    options: { stores, phases: PHASES, duration: DURATION, rounds: ROUNDS, latencyDuration: LATENCY_DURATION, pacedWarmup: PACED_WARMUP, healthy: HEALTHY, outage: OUTAGE, outageMode: OUTAGE_MODE, rate: RATE, devices: DEVICES, window: WINDOW, concurrency: CONCURRENCY, dataBytes: DATA_BYTES, probe: PROBE },
    throughput: t, latency: l, outage: o, goals,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
}

const budget = stores.length * (120 + 3 * PACED_WARMUP + ROUNDS * (2 * DURATION + SETTLE_MS / 1000) + 2 * LATENCY_DURATION + HEALTHY + OUTAGE + DRAIN_BOUND_MS / 1000 + 2 * SETTLE_MS / 1000);
runBenchmark('bench:webhooks', budget, main);
