import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createDevice, type Device } from '../../src/sdk/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { cliHome, skyport, type CliResult } from '../helpers/cli.js';

/**
 * The device commands of the skyport CLI against a real cloud: provisioning (secrets once, to a
 * 0600 file), list/show/rename/ping/signal, call and get on an SDK device, subscribe and publish.
 */
let server: TestServer;
let token: string;
let product: { id: number; slug: string };
let home: string;
/** Credentials provisioned by the CLI, connected with the SDK by the tests that need a device. */
let creds: Array<{ id: string; secret: string }> = [];

before(async () => {
  server = await startTestServer();
  ({ token } = await signUp(server.url));
  product = await newProduct(server.url, token);
  home = await cliHome();
});
after(async () => { await server.close(); });

const run = (args: string[]): Promise<CliResult> => skyport(args, { home, env: { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url } });
const fleetSize = async () => (await raw(`${server.url}/v1/products/${product.id}/devices`, { token })).json.meta.total as number;
/** One line on stderr, `skyport: …`, and a non-zero exit. */
function failed(r: CliResult, pattern: RegExp): void {
  assert.equal(r.code, 1, r.stdout);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr.trim(), pattern);
}

async function sdkDevice(who: { id: string; secret: string }, setup: (d: Device) => void = () => undefined): Promise<Device> {
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: false });
  setup(d);
  await d.connect();
  return d;
}

test('device provision: one device, many into a new 0600 CSV or JSON file; secrets once; no overwrite, nothing left after a refusal', async () => {
  const one = await run(['device', 'provision', '--product', product.slug]);
  assert.equal(one.code, 0, one.stderr);
  const [, row] = one.stdout.trim().split('\n');
  const [id, secret] = (row ?? '').split(/\s+/);
  assert.match(id ?? '', /^[0-9a-f]{24}$/);
  assert.match(secret ?? '', /^[0-9a-f]{48}$/);
  assert.match(one.stderr, /^warning: device secrets are shown once/);

  const csv = join(home, 'creds.csv');
  const json = join(home, 'creds.json');
  const [many, asJson] = await Promise.all([
    run(['device', 'provision', '--product', String(product.id), '--count', '3', '--out', csv]),
    run(['device', 'provision', '--product', String(product.id), '--count', '2', '--out', json, '--json']),
  ]);
  assert.equal(many.code, 0, many.stderr);
  assert.match(many.stdout, /^provisioned 3 devices in product \d+; credentials in .*creds\.csv/);
  assert.match(many.stderr, /shown once: .*creds\.csv is their only copy/);
  assert.equal((await stat(csv)).mode & 0o777, 0o600);
  const lines = (await readFile(csv, 'utf8')).trim().split('\n');
  assert.equal(lines[0], 'device_id,device_secret');
  assert.equal(lines.length, 4);
  creds = lines.slice(1).map((l) => { const [i, s] = l.split(','); return { id: i as string, secret: s as string }; });

  assert.equal(asJson.code, 0, asJson.stderr);
  assert.equal(asJson.json.count, 2);
  assert.equal(asJson.json.devices.length, 2);
  assert.equal(asJson.json.devices[0].device_secret, undefined, 'with --out, secrets go to the file only');
  assert.equal((await stat(json)).mode & 0o777, 0o600);
  const saved = JSON.parse(await readFile(json, 'utf8')) as Array<{ id: string; device_secret: string }>;
  assert.deepEqual(saved.map((d) => d.id), asJson.json.devices.map((d: { id: string }) => d.id));
  assert.equal(await fleetSize(), 6);

  // The secrets work: a device connects with one from the file.
  const d = await sdkDevice(creds[0] as { id: string; secret: string });
  await d.close();

  // An existing file is never overwritten, and nothing is provisioned; an unknown product
  // leaves no file behind.
  const before = await readFile(csv, 'utf8');
  const missing = join(home, 'none.csv');
  const [again, unknown, zero] = await Promise.all([
    run(['device', 'provision', '--product', String(product.id), '--count', '2', '--out', csv]),
    run(['device', 'provision', '--product', 'no-such-product', '--count', '2', '--out', missing]),
    run(['device', 'provision', '--product', String(product.id), '--count', '0']),
  ]);
  failed(again, /^skyport: .*creds\.csv exists/);
  assert.equal(await readFile(csv, 'utf8'), before);
  failed(unknown, /^skyport: Permission Denied.*\[403\]$/);
  await assert.rejects(stat(missing), /ENOENT/);
  failed(zero, /^skyport: --count must be a whole number from 1/);
  assert.equal(await fleetSize(), 6);
});

test('device list, show, rename, ping, signal; call and get on an SDK device; errors in one line', async () => {
  assert.ok(creds.length >= 2, 'the provisioning test ran first');
  const signals: boolean[] = [];
  const who = creds[0] as { id: string; secret: string };
  const d = await sdkDevice(who, (dev) => dev
    .function('led', (arg) => (arg === 'on' ? 1 : 0))
    .variable('temp', 'double', () => 21.5)
    .onSignal((on) => signals.push(on)));
  try {
    await eventually(async () => ((await raw(`${server.url}/v1/devices/${who.id}`, { token })).json.functions?.length === 1 ? true : undefined));
    const [list, listJson, show, rename, ping, signal, call, get, getJson] = await Promise.all([
      run(['device', 'list', '--product', product.slug]),
      run(['device', 'list', '--product', String(product.id), '--json']),
      run(['device', 'show', who.id, '--json']),
      run(['device', 'rename', (creds[1] as { id: string }).id, 'kitchen']),
      run(['device', 'ping', who.id]),
      run(['device', 'signal', who.id, 'on']),
      run(['call', who.id, 'led', 'on']),
      run(['get', who.id, 'temp']),
      run(['get', who.id, 'temp', '--json']),
    ]);
    for (const r of [list, listJson, show, rename, ping, signal, call, get, getJson]) assert.equal(r.code, 0, r.stderr);
    const header = list.stdout.split('\n')[0] ?? '';
    assert.match(header, /^ID\s+NAME\s+ONLINE\s+LAST HEARD/);
    const mine = list.stdout.split('\n').find((l) => l.startsWith(who.id)) ?? '';
    assert.match(mine, new RegExp(`^${who.id}\\s+-\\s+yes\\s`));
    assert.equal(list.stdout.trim().split('\n').length, 7, 'a header and six devices');
    assert.equal(listJson.json.length, 6);
    assert.deepEqual([show.json.id, show.json.online, show.json.functions], [who.id, true, ['led']]);
    assert.match(rename.stdout, /^renamed [0-9a-f]{24} to kitchen\n$/);
    assert.equal((await raw(`${server.url}/v1/devices/${(creds[1] as { id: string }).id}`, { token })).json.name, 'kitchen');
    assert.equal(ping.stdout, `${who.id} is online\n`);
    assert.equal(signal.stdout, `${who.id} is signalling\n`);
    await eventually(() => (signals[0] === true ? true : undefined));
    assert.equal(call.stdout, '1\n');
    assert.equal(get.stdout, '21.5\n');
    assert.equal(getJson.json.result, 21.5);
    assert.equal(getJson.json.coreInfo.deviceID, who.id);

    const [unknown, noFunction, offline, badState] = await Promise.all([
      run(['device', 'show', 'ffffffffffffffffffffffff']),
      run(['call', who.id, 'nope']),
      run(['get', (creds[1] as { id: string }).id, 'temp']),
      run(['device', 'signal', who.id, 'blink']),
    ]);
    failed(unknown, /^skyport: Permission Denied.*\[403\]$/);
    failed(noFunction, /^skyport: Function not found.*"nope".*\[404\]$/);
    failed(offline, /^skyport: device_offline.*\[404\]$/);
    assert.notEqual(badState.code, 0);
    assert.match(badState.stderr, /Allowed choices are on, off/);
  } finally {
    await d.close();
  }
});

test('subscribe prints `name data` lines (or JSON lines) until --count; publish reaches the fleet', async () => {
  const who = creds[2] as { id: string; secret: string };
  const got: string[] = [];
  const d = await sdkDevice(who, (dev) => dev.subscribe('greet', (e) => got.push(`${e.name}=${e.data}`)));
  try {
    const subscribers = Promise.all([
      run(['subscribe', 'temp', '--product', product.slug, '--count', '2']),
      run(['subscribe', '--device', who.id, '--count', '1', '--json']),
    ]);
    // Events are not stored: publish until both streams have seen theirs.
    let finished = false;
    void subscribers.finally(() => { finished = true; });
    while (!finished) {
      await d.publish('other', 'x');
      await d.publish('temp', '21.5');
      await new Promise((r) => setTimeout(r, 100));
    }
    const [byProduct, byDevice] = await subscribers;
    assert.equal(byProduct.code, 0, byProduct.stderr);
    assert.equal(byProduct.stdout, 'temp 21.5\ntemp 21.5\n', 'the prefix leaves `other` out');
    assert.equal(byDevice.code, 0, byDevice.stderr);
    const lines = byDevice.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const event = JSON.parse(lines[0] as string);
    assert.ok(['temp', 'other'].includes(event.name));
    assert.equal(event.coreid, who.id);
    assert.equal(event.productID, product.id);

    const [published, reserved, both] = await Promise.all([
      run(['publish', 'greet', 'hello', '--product', String(product.id)]),
      run(['publish', 'spark/x']),
      run(['publish', 'greet', '--private', '--public']),
    ]);
    assert.equal(published.code, 0, published.stderr);
    assert.equal(published.stdout, `published greet (private) to product ${product.id}\n`);
    await eventually(() => (got.includes('greet=hello') ? true : undefined));
    failed(reserved, /^skyport: invalid_request: .*spark\/.*\[400\]$/);
    failed(both, /^skyport: give --private or --public, not both$/);

    const unreachable = await run(['subscribe', '--device', 'ffffffffffffffffffffffff', '--count', '1']);
    failed(unreachable, /^skyport: Permission Denied.*\[403\]$/);
  } finally {
    await d.close();
  }
});
