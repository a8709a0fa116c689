// Benchmarks of issue 2: token issuance (client_credentials, password grant) and an
// authenticated read, each beside a bare node:http server in the same run (a ratio).
//   npm run bench [-- --duration 10 --store embedded|postgres]
// Servers run in their own processes on 127.0.0.1; autocannon (32 connections) drives them.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

const args = process.argv.slice(2);
const flag = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? (args[i + 1] as string) : dflt;
};
const duration = Number(flag('duration', '10'));
const store = flag('store', 'embedded');
const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

interface Result { name: string; rps: number; p50: number; p99: number; non2xx: number }

async function load(name: string, opts: autocannon.Options): Promise<Result> {
  await autocannon({ ...opts, connections: 32, duration: 2 }); // warm-up
  const r = await autocannon({ ...opts, connections: 32, duration });
  const res = { name, rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors };
  if (res.non2xx > 0) throw new Error(`${name}: ${res.non2xx} failed requests`);
  return res;
}

async function main(): Promise<void> {
  const barePort = await freePort();
  const bare = fork(new URL('./bare-server.mjs', import.meta.url).pathname, { env: { ...process.env, PORT: String(barePort) } });
  children.push(bare);
  await new Promise((r) => bare.once('message', r));

  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'skyport-bench-'));
  let dbName: string | undefined;
  const env: Record<string, string> = { ...process.env as Record<string, string>, LOG_LEVEL: 'warn', DATA_DIR: dir };
  if (store === 'postgres') {
    dbName = `skyport_bench_${Date.now()}`;
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    env.DATABASE_URL = `postgres://postgres@127.0.0.1:5432/${dbName}`;
  }
  const sky = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'server', 'start', '--port', String(port), '--host', '127.0.0.1'], { env, stdio: 'ignore' });
  children.push(sky);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`);

  const username = `bench-${Date.now()}@example.com`;
  await fetch(`${url}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password: 'bench password' }) });
  const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
  const passwordForm = form({ grant_type: 'password', username, password: 'bench password', client_id: 'particle-api', client_secret: 'particle-api' });
  const login = await (await fetch(`${url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: passwordForm })).json() as { access_token: string };
  const client = (await (await fetch(`${url}/v1/clients`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ name: 'bench' }) })).json() as { client: { id: string; secret: string } }).client;

  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
  const results: Result[] = [];
  results.push(await load('bare node:http (baseline)', { url: `http://127.0.0.1:${barePort}/`, method: 'POST', headers: formHeaders, body: 'x=1' }));
  results.push(await load('client_credentials token', { url: `${url}/oauth/token`, method: 'POST', headers: formHeaders, body: form({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }) }));
  results.push(await load('authenticated GET /v1/user', { url: `${url}/v1/user`, headers: { authorization: `Bearer ${login.access_token}` } }));
  results.push(await load('password grant (argon2id)', { url: `${url}/oauth/token`, method: 'POST', headers: formHeaders, body: passwordForm }));

  const base = results[0]?.rps ?? 1;
  console.log(`\nstore: ${store}, ${duration} s per scenario, 32 connections, ${new Date().toISOString().slice(0, 10)}\n`);
  console.log('| scenario | req/s | p50 ms | p99 ms | ratio to bare |');
  console.log('|---|---|---|---|---|');
  for (const r of results) console.log(`| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${(r.rps / base).toFixed(2)} |`);

  children.forEach((c) => c.kill('SIGTERM'));
  await new Promise((r) => setTimeout(r, 1500));
  rmSync(dir, { recursive: true, force: true });
  if (dbName) {
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
}).finally(() => children.forEach((c) => c.kill('SIGKILL')));
