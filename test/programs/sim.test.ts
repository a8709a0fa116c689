import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { email, startTestServer, type TestServer } from '../helpers/server.js';
import { basic, raw } from '../helpers/http.js';
import { softap } from '../helpers/softap.js';
import { eventually } from '../helpers/eventually.js';
import { PASSWORD, newProduct, signUp } from '../helpers/fixtures.js';
import { spawnSkyport } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';

/** `skyport sim` as a user runs it, against a started server. */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

interface Run { code: number | null; out: string; err: string }

/** `skyport sim ...` in a child process; `kill` sends it a signal while it runs. */
function simProcess(args: string[], env: Record<string, string> = {}): { done: Promise<Run>; kill: (signal: NodeJS.Signals) => void; output: () => Run } {
  const p = spawnSkyport(['sim', ...args], env);
  const output = (code: number | null = null): Run => ({ code, out: p.out(), err: p.err() });
  return { done: p.exit.then(output), kill: (signal) => p.child.kill(signal), output: () => output() };
}

const sim = (args: string[], env: Record<string, string> = {}) => simProcess(args, env).done;

/** Whether a loopback port can be listened on now. */
function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * The first of `count` consecutive loopback ports nothing listens on, below Linux's ephemeral
 * range (32768 and up), where the outgoing connections of the other test files, which the
 * kernel numbers from that range, cannot take one between this check and the listen.
 */
async function freePortRun(count: number): Promise<number> {
  for (let tries = 0; tries < 200; tries += 1) {
    const first = 20_000 + Math.floor(Math.random() * (12_000 - count));
    let all = true;
    for (let p = first; p < first + count && all; p += 1) all = await listenable(p);
    if (all) return first;
  }
  throw new Error(`no ${count} consecutive free loopback ports found`);
}

test('sim provisions N devices, connects them with functions and variables, and prints a summary', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const dir = mkdtempSync(join(tmpdir(), 'skyport-sim-'));
  try {
    const out = join(dir, 'creds.csv');
    const started = Date.now();
    const run = sim(['--count', '5', '--product', String(product.id), '--api-url', server.url, '--mqtt-url', server.mqttUrl, '--out', out, '--duration', '2', '--json'], { SKYPORT_TOKEN: token });
    // While it runs, its devices answer calls.
    const listed = await eventually(async () => {
      const devices = (await raw(`${server.url}/v1/products/${product.id}/devices`, { token })).json.devices as Array<{ id: string; online: boolean }>;
      return devices.length === 5 && devices.every((d) => d.online) ? devices : undefined;
    }, 5000, 'five devices online');
    const first = listed[0]!.id;
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${first}/echo`, { method: 'POST', token, json: { arg: 'hello' } })).json.return_value, 5);
    assert.equal(typeof (await raw(`${server.url}/v1/products/${product.id}/devices/${first}/temp`, { token })).json.result, 'number');

    const done = await run;
    assert.equal(done.code, 0, done.err);
    const summary = JSON.parse(done.out) as { total: number; connected: number; failed: number; skipped: number; connect_rate_per_s: number; elapsed_ms: number; errors: string[] };
    assert.deepEqual({ ...summary, connect_rate_per_s: 0, elapsed_ms: 0 }, { total: 5, connected: 5, failed: 0, skipped: 0, connect_rate_per_s: 0, elapsed_ms: 0, errors: [] });
    // The connecting took some of the run's time, and the rate is the devices over it.
    assert.ok(summary.elapsed_ms > 0 && summary.elapsed_ms <= Date.now() - started, `elapsed ${summary.elapsed_ms} ms`);
    assert.ok(Math.abs(summary.connect_rate_per_s - 5000 / summary.elapsed_ms) <= 0.1, `rate ${summary.connect_rate_per_s}/s`);
    // After --duration the devices were closed with a DISCONNECT.
    await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices`, { token })).json.devices.every((d: { online: boolean }) => !d.online) ? true : undefined));
    assert.match(done.err, /provisioning|connecting/);
    assert.equal(statSync(out).mode & 0o777, 0o600);

    // The same identities again, from the file.
    const again = await sim(['--credentials', out, '--mqtt-url', server.mqttUrl, '--duration', '1', '--json']);
    assert.equal(again.code, 0, again.err);
    assert.equal((JSON.parse(again.out) as { connected: number }).connected, 5);
    assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 6);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sim says what is missing, and counts refused devices as failures', async () => {
  const noArgs = await sim(['--duration', '1']);
  assert.equal(noArgs.code, 1);
  assert.match(noArgs.err, /^skyport: give --count N and --product P, or --credentials FILE\n$/);
  const dir = mkdtempSync(join(tmpdir(), 'skyport-sim-'));
  try {
    const file = join(dir, 'bad.csv');
    writeFileSync(file, 'id,secret\n0123456789abcdef01234567,wrong\n');
    const refused = await sim(['--credentials', file, '--mqtt-url', server.mqttUrl, '--duration', '1', '--json']);
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.out) as { failed: number }).failed, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without --duration it runs until SIGINT, then closes its devices and prints the summary as a table', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const run = simProcess(['--count', '3', '--product', product.slug, '--api-url', server.url, '--mqtt-url', server.mqttUrl], { SKYPORT_TOKEN: token });
  const online = async () => (await raw(`${server.url}/v1/products/${product.id}/devices`, { token })).json.devices.filter((d: { online: boolean }) => d.online).length;
  await eventually(async () => ((await online()) === 3 && /Ctrl-C/.test(run.output().err) ? true : undefined), 20_000);
  run.kill('SIGINT');
  const done = await run.done;
  assert.equal(done.code, 0, done.err);
  assert.match(done.out, /^connected {5}3 of 3\nfailed {8}0\nconnect rate {2}[\d.]+\/s\nelapsed {7}[\d.]+ s\n$/);
  // Not a terminal: progress comes as whole lines, not a bar redrawn with \r.
  assert.match(done.err, /^connecting {3}\[#+\] 3\/3$/m);
  assert.doesNotMatch(done.err, /\r/);
  await eventually(async () => ((await online()) === 0 ? true : undefined));
});

test('a cloud that does not answer: each device fails after --connect-timeout', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-sim-'));
  try {
    const file = join(dir, 'creds.json');
    writeFileSync(file, JSON.stringify({ devices: [{ id: '0123456789abcdef01234567', device_secret: 's' }, { id: '0123456789abcdef01234568', device_secret: 's' }] }));
    const started = Date.now();
    const done = await sim(['--credentials', file, '--mqtt-url', `mqtt://127.0.0.1:${await freePort()}`, '--connect-timeout', '1', '--json']);
    assert.equal(done.code, 1, done.err);
    const summary = JSON.parse(done.out) as { total: number; connected: number; failed: number; errors: string[] };
    assert.deepEqual([summary.total, summary.connected, summary.failed], [2, 0, 2]);
    assert.match(summary.errors[0] ?? '', /did not connect within 1000 ms/);
    // Nothing connected, so it does not wait for Ctrl-C.
    assert.ok(Date.now() - started < 15_000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad flags are refused before anything is provisioned', async () => {
  const done = await sim(['--count', '2', '--product', '1', '--duration', 'soon'], { SKYPORT_TOKEN: 'x', SKYPORT_API_URL: 'http://127.0.0.1:9' });
  assert.equal(done.code, 1);
  assert.match(done.err, /^skyport: --duration must be a whole number from 1 to 604800\n$/);
});

describe('sim --listening: devices an app sets up as it would hardware', () => {
  test('two devices on the ports asked for; set up over TCP and HTTP by softap-setup, each claimed by its customer', async () => {
    const { token } = await signUp(server.url);
    const product = await newProduct(server.url, token, 'Lamps', 12);
    const client = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
    const app = { id: client.json.client.id as string, secret: client.json.client.secret as string };
    const ids = (await raw(`${server.url}/v1/products/${product.id}/device_identities`, { method: 'POST', token, json: { quantity: 2 } })).json.devices as Array<{ id: string; device_secret: string }>;
    const dir = mkdtempSync(join(tmpdir(), 'skyport-sim-'));
    const credentials = join(dir, 'devices.csv');
    writeFileSync(credentials, ['id,secret', ...ids.map((d) => `${d.id},${d.device_secret}`)].join('\n'));
    const wifi = join(dir, 'wifi.json');
    writeFileSync(wifi, JSON.stringify([{ ssid: 'home', password: 'correct horse battery', security: 'wpa2', channel: 6, rssi: -40 }]));
    // Each device takes the next port of each range: two ranges of two, apart.
    const httpPort = await freePortRun(4);
    const tcpPort = httpPort + 2;
    const run = simProcess(['--listening', '--credentials', credentials, '--wifi', wifi, '--softap-http-port', String(httpPort), '--softap-tcp-port', String(tcpPort), '--api-url', server.url, '--mqtt-url', server.mqttUrl]);
    try {
      const lines = () => run.output().out.split('\n');
      for (const d of ids) await eventually(() => lines().find((l) => l.startsWith(`${d.id}  listening`)), 10_000, `${d.id} listening`);
      // One line per device with its two setup addresses, consecutive ports from those asked for.
      assert.ok(lines().includes(`${ids[0]!.id}  listening  http http://127.0.0.1:${httpPort}  tcp 127.0.0.1:${tcpPort}`), run.output().out);
      assert.ok(lines().includes(`${ids[1]!.id}  listening  http http://127.0.0.1:${httpPort + 1}  tcp 127.0.0.1:${tcpPort + 1}`), run.output().out);

      for (const [i, protocol] of (['tcp', 'http'] as const).entries()) {
        const device = ids[i]!;
        const customer = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(app.id, app.secret) }, form: { email: email(), password: PASSWORD } });
        const customerToken = customer.json.access_token as string;
        const code = (await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: customerToken, json: {} })).json.claim_code as string;
        const setup = softap('127.0.0.1', (protocol === 'tcp' ? tcpPort : httpPort) + i, protocol);
        assert.deepEqual(await setup.deviceInfo(), { id: device.id, claimed: false });
        await setup.setClaimCode(code);
        assert.deepEqual((await setup.scan()).map((n) => n.ssid), ['home']);
        await setup.publicKey();
        await setup.configure({ ssid: 'home', security: 'wpa2_aes', password: 'correct horse battery', channel: 6 });
        await setup.connect();
        await eventually(() => lines().find((l) => l === `${device.id}  claimed: the cloud confirmed the claim code`), 10_000, `${device.id} claimed`);
        const listed = (await raw(`${server.url}/v1/devices`, { token: customerToken })).json as Array<{ id: string }>;
        assert.deepEqual(listed.map((d) => d.id), [device.id]);
        const call = await raw(`${server.url}/v1/devices/${device.id}/echo`, { method: 'POST', token: customerToken, json: { arg: 'lamp' } });
        assert.equal(call.json.return_value, 4, call.text);
      }
      // Progress of each step, and never the Wi-Fi password.
      const first = lines().filter((l) => l.startsWith(ids[0]!.id)).map((l) => l.slice(ids[0]!.id.length + 2));
      for (const step of ['claim code stored', 'Wi-Fi network "home" stored', 'joining "home"', 'joined "home"', 'connected to the cloud']) assert.ok(first.includes(step), `${step} in ${first.join(' | ')}`);
      assert.ok(!run.output().out.includes('correct horse battery'));
    } finally {
      run.kill('SIGINT');
      const done = await run.done;
      assert.equal(done.code, 0, done.err);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bad options are refused before any device starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skyport-sim-'));
    try {
      const credentials = join(dir, 'devices.csv');
      writeFileSync(credentials, 'id,secret\n0123456789abcdef01234567,x\n0123456789abcdef01234568,y\n');
      const wifi = join(dir, 'wifi.json');
      writeFileSync(wifi, JSON.stringify([{ ssid: 'home', security: 'wpa3' }]));
      const cases: Array<[string[], RegExp]> = [
        [['--listening'], /--listening needs --credentials FILE/],
        [['--listening', '--credentials', credentials, '--wifi', wifi], /wifi\.json\[0\]\.security: one of open, wep, wpa, wpa2, wpa2-enterprise/],
        [['--listening', '--credentials', credentials, '--wifi', join(dir, 'none.json')], /none\.json: ENOENT/],
        [['--listening', '--credentials', credentials, '--softap-http-port', '70000'], /--softap-http-port must be a port number/],
        [['--listening', '--credentials', credentials, '--softap-http-port', '9000', '--softap-tcp-port', '9001'], /ranges 9000-9001 and 9001-9002 overlap/],
      ];
      for (const [args, pattern] of cases) {
        const r = await sim([...args, '--api-url', server.url, '--mqtt-url', server.mqttUrl]);
        assert.notEqual(r.code, 0, args.join(' '));
        assert.match(r.err, pattern, args.join(' '));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
