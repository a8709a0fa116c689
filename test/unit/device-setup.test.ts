import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, createPublicKey, publicEncrypt, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { createDevice, DEFAULT_NETWORKS, ListeningRefusedError, SECURITY_CODES, type Device, type Listening, type SetupProgress } from '../../src/sdk/index.js';
import { CLAIM_CODE_MAX, MAX_REQUEST_BYTES, runCommand, type Credentials, type SetupTarget } from '../../src/sdk/setup/commands.js';
import { createSetupKey } from '../../src/sdk/setup/keys.js';
import { parseNetworks } from '../../src/sdk/setup/wifi.js';
import { softap, tcpExchange } from '../helpers/softap.js';
import { eventually } from '../helpers/eventually.js';

/**
 * Listening mode of the device SDK without a cloud: Particle's setup protocol over HTTP and TCP,
 * driven by Particle's own client (softap-setup) and by hand for every bad input. Joining and
 * claiming against a real cloud: test/device-setup.test.ts.
 */
const ID = '0123456789abcdef01234567';
// Nothing listens on port 1: a device that joined tries the cloud and keeps retrying, harmlessly.
const NOWHERE = 'mqtt://127.0.0.1:1';
const HOME = { ssid: 'home', password: 'correct horse battery', security: 'wpa2' as const, channel: 6, rssi: -50 };
const NETWORKS = [HOME, { ssid: 'cafe', security: 'open' as const, channel: 11, rssi: -70 }, { ssid: '', security: 'open' as const, channel: 1, rssi: -20 }];

const devices: Device[] = [];
after(async () => { await Promise.all(devices.map((d) => d.close())); });

async function listening(options: { platformId?: number; freeMemory?: number } = {}): Promise<{ device: Device; setup: Listening; progress: SetupProgress[] }> {
  const device = createDevice({ url: NOWHERE, id: ID, secret: 'x', reconnect: { minMs: 1000, maxMs: 1000 }, ...options });
  devices.push(device);
  const setup = await device.listen({ networks: NETWORKS });
  const progress: SetupProgress[] = [];
  setup.on('progress', (p: SetupProgress) => progress.push(p));
  return { device, setup, progress };
}

async function http(setup: Listening, path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const res = await fetch(`${setup.http.url}${path}`, init);
  return { status: res.status, headers: res.headers, json: await res.json() as Record<string, unknown> };
}
const post = (setup: Listening, command: string, body: string) => http(setup, `/${command}`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const tcp = async (setup: Listening, request: string | Buffer, options: { halfClose?: boolean } = {}) => {
  const text = await tcpExchange(setup.tcp.host, setup.tcp.port, request, options);
  assert.ok(text.startsWith('\n\n'), `answers start with an empty line: ${JSON.stringify(text)}`);
  return JSON.parse(text) as Record<string, unknown>;
};

for (const protocol of ['http', 'tcp'] as const) {
  test(`softap-setup over ${protocol}: version, device id, key, scan, claim code and Wi-Fi credentials`, async () => {
    const { setup, progress } = await listening();
    const client = softap(setup.http.host, protocol === 'http' ? setup.http.port : setup.tcp.port, protocol);
    assert.deepEqual(await client.version(), { v: 2 });
    assert.deepEqual(await client.deviceInfo(), { id: ID, claimed: false });
    const pem = await client.publicKey();
    const key = createPublicKey(pem);
    assert.equal(key.asymmetricKeyDetails?.modulusLength, 1024);
    const scans = await client.scan();
    // Strongest first; a network without a name is left out.
    assert.deepEqual(scans, [
      { ssid: 'home', rssi: -50, sec: SECURITY_CODES.wpa2_aes, ch: 6, mdr: 72_200 },
      { ssid: 'cafe', rssi: -70, sec: SECURITY_CODES.open, ch: 11, mdr: 72_200 },
    ]);
    await client.setClaimCode('a-claim-code');
    assert.deepEqual(await client.configure({ ssid: 'home', security: 'wpa2_aes', password: HOME.password, channel: 6 }), { r: 0 });
    assert.ok(progress.some((p) => p.message.includes('"home" stored')));
    // The password is in no progress line.
    assert.ok(!JSON.stringify(progress).includes(HOME.password));
  });
}

test('public-key: the DER SubjectPublicKeyInfo of an RSA-1024 key, zero-padded to 294 bytes', async () => {
  const { setup } = await listening();
  const answer = (await http(setup, '/public-key')).json;
  assert.equal(answer.r, 0);
  const b = Buffer.from(answer.b as string, 'hex');
  assert.equal(b.length, 294);
  const key = createPublicKey({ key: b.subarray(0, 162), format: 'der', type: 'spki' });
  assert.equal(key.asymmetricKeyDetails?.modulusLength, 1024);
  assert.ok(b.subarray(162).every((x) => x === 0));
  // The same key every time the device is asked.
  assert.equal((await tcp(setup, 'public-key\n0\n\n')).b, answer.b);
});

test('HTTP: 200 application/json for every answer, any origin allowed, the pre-flight answered', async () => {
  const { setup } = await listening();
  const info = await http(setup, '/device-id', { headers: { origin: 'https://app.example.com' } });
  assert.equal(info.status, 200);
  assert.equal(info.headers.get('content-type'), 'application/json');
  assert.equal(info.headers.get('access-control-allow-origin'), '*');
  assert.deepEqual(info.json, { id: ID.toUpperCase(), c: '0' });
  const preflight = await fetch(`${setup.http.url}/set`, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
  assert.equal(preflight.status, 200);
  assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
  assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
  // A body sent as a form, as a browser does to avoid the pre-flight, is the raw JSON.
  assert.deepEqual((await post(setup, 'set', JSON.stringify({ k: 'cc', v: 'code' }))).json, { r: 0 });
});

describe('bad input gets {"r":-1} with a reason, and the device keeps serving', () => {
  const encrypted = (password: string) => publicEncrypt({ key: createPublicKey({ key: Buffer.from(keyHex, 'hex').subarray(0, 162), format: 'der', type: 'spki' }), padding: constants.RSA_PKCS1_PADDING }, Buffer.from(password)).toString('hex');
  let keyHex = '';
  const cases: Array<[string, string, string | undefined, RegExp]> = [
    ['unknown command', 'reboot', undefined, /unknown command "reboot"/],
    ['malformed JSON', 'set', '{"k":"cc",', /not valid JSON/],
    ['a body that is not an object', 'set', '["cc","x"]', /must be a JSON object/],
    ['a command that needs a body, without one', 'configure-ap', undefined, /needs a JSON object/],
    ['another key than cc', 'set', '{"k":"ssid","v":"x"}', /only key is "cc"/],
    ['a claim code that is not a text', 'set', '{"k":"cc","v":42}', /v must be the claim code/],
    ['an empty claim code', 'set', '{"k":"cc","v":""}', /v must be the claim code/],
    ['an ssid of the wrong type', 'configure-ap', '{"idx":0,"ssid":7,"sec":0,"ch":1}', /ssid must be/],
    ['an ssid too long', 'configure-ap', JSON.stringify({ idx: 0, ssid: 'x'.repeat(33), sec: 0, ch: 1 }), /ssid must be/],
    ['an unknown security code', 'configure-ap', '{"idx":0,"ssid":"home","sec":12345,"ch":6}', /security codes/],
    ['a channel of the wrong type', 'configure-ap', '{"idx":0,"ssid":"cafe","sec":0,"ch":"six"}', /ch must be/],
    ['an index out of range', 'connect-ap', '{"idx":9}', /idx must be/],
    ['a secured network without a password', 'configure-ap', '{"idx":0,"ssid":"home","sec":4194308,"ch":6}', /needs pwd/],
    ['a password that is not hex', 'configure-ap', JSON.stringify({ idx: 0, ssid: 'home', sec: 0x400004, ch: 6, pwd: 'correct horse' }), /256 hex characters/],
    ['a password that does not decrypt', 'configure-ap', JSON.stringify({ idx: 0, ssid: 'home', sec: 0x400004, ch: 6, pwd: randomBytes(128).toString('hex') }), /does not decrypt/],
    ['connect-ap before any network is configured', 'connect-ap', '{"idx":0}', /no Wi-Fi network is configured/],
  ];

  for (const protocol of ['http', 'tcp'] as const) {
    test(`over ${protocol}`, async () => {
      const { setup } = await listening();
      keyHex = (await http(setup, '/public-key')).json.b as string;
      const all = [...cases, ['a password encrypted with another key', 'configure-ap', JSON.stringify({ idx: 0, ssid: 'home', sec: 0x400004, ch: 6, pwd: publicEncrypt({ key: createSetupKeyPublic(), padding: constants.RSA_PKCS1_PADDING }, Buffer.from('x')).toString('hex') }), /does not decrypt/] as [string, string, string, RegExp]];
      for (const [what, command, body, reason] of all) {
        const answer = protocol === 'http'
          ? (body === undefined ? await http(setup, `/${command}`) : await post(setup, command, body)).json
          : await tcp(setup, `${command}\n${body === undefined ? 0 : Buffer.byteLength(body)}\n\n${body ?? ''}`);
        assert.equal(answer.r, -1, `${what}: ${JSON.stringify(answer)}`);
        assert.match(String(answer.error), reason, what);
      }
      // Still serving, and a good password after all that is taken.
      assert.deepEqual((await post(setup, 'configure-ap', JSON.stringify({ idx: 0, ssid: 'home', sec: 0x400004, ch: 6, pwd: encrypted(HOME.password) }))).json, { r: 0 });
      assert.deepEqual((await tcp(setup, 'device-id\n0\n\n')).c, '0');
    });
  }

  test('a request larger than the device takes, over both transports', async () => {
    const { setup } = await listening();
    const big = JSON.stringify({ k: 'cc', v: 'x'.repeat(MAX_REQUEST_BYTES) });
    const byHttp = await post(setup, 'set', big);
    assert.equal(byHttp.status, 200);
    assert.equal(byHttp.json.r, -1);
    assert.match(String(byHttp.json.error), /larger than the device takes/);
    assert.match(String((await tcp(setup, `set\n${Buffer.byteLength(big)}\n\n${big}`)).error), /larger than the device takes/);
    // Far larger: cut off without reading it all, and still serving.
    const huge = await post(setup, 'set', 'x'.repeat(2 * 1024 * 1024)).catch((err: Error) => err);
    if (!(huge instanceof Error)) assert.equal(huge.json.r, -1);
    assert.deepEqual((await http(setup, '/version')).json, { v: 2 });
  });

  test('TCP framing: a bad length line, a missing empty line, a header that never ends, a body cut short', async () => {
    const { setup } = await listening();
    assert.match(String((await tcp(setup, 'set\nten\n\n{}')).error), /length in bytes/);
    assert.match(String((await tcp(setup, 'set\n2\n{}')).error), /empty line must follow/);
    assert.match(String((await tcp(setup, 'x'.repeat(200))).error), /must start with/);
    assert.match(String((await tcp(setup, 'set\n40\n\n{"k":"cc"', { halfClose: true })).error), /ended before its body/);
    assert.deepEqual(await tcp(setup, 'version\n0\n\n'), { v: 2 });
  });
});

function createSetupKeyPublic() {
  return createPublicKey({ key: Buffer.from(createSetupKey().publicKeyHex, 'hex').subarray(0, 162), format: 'der', type: 'spki' });
}

test('a wrong password or an absent network brings the device back to listening mode on the same ports', async () => {
  const { device, setup, progress } = await listening();
  const client = softap(setup.http.host, setup.tcp.port, 'tcp');
  await client.publicKey();
  await client.configure({ ssid: 'home', security: 'wpa2_aes', password: 'not the password', channel: 6 });
  await client.connect();
  await eventually(() => (progress.filter((p) => p.step === 'listening').length === 1 ? true : undefined));
  assert.deepEqual(progress.filter((p) => p.step !== 'command').map((p) => p.step), ['configured', 'joining', 'join-failed', 'listening']);
  assert.match(progress.find((p) => p.step === 'join-failed')?.message ?? '', /"home" refused the password/);
  assert.equal(device.state, 'connecting', 'not online meanwhile');
  // Back on the same ports, over both transports.
  assert.deepEqual(await softap(setup.http.host, setup.http.port, 'http').deviceInfo(), { id: ID, claimed: false });
  await client.publicKey();
  await client.configure({ ssid: 'elsewhere', security: 'open' });
  await client.connect();
  await eventually(() => (progress.filter((p) => p.step === 'listening').length === 2 ? true : undefined));
  assert.match(progress.filter((p) => p.step === 'join-failed')[1]?.message ?? '', /no network named "elsewhere"/);
  assert.ok(!JSON.stringify(progress).includes('not the password'));
  // The right password joins; the device then leaves listening mode for the cloud.
  await client.publicKey();
  await client.configure({ ssid: 'home', security: 'wpa2_aes', password: HOME.password, channel: 6 });
  await client.connect();
  await eventually(() => (progress.some((p) => p.step === 'joined') ? true : undefined));
  assert.equal(setup.active, false);
  await assert.rejects(softap(setup.http.host, setup.http.port, 'http').version(), /ECONNREFUSED/);
});

test('set keeps at most 63 characters of a claim code, as the firmware', () => {
  let kept = '';
  const target: SetupTarget = {
    id: ID, claimed: false, key: createSetupKey(), networks: DEFAULT_NETWORKS, cellular: false, configured: false,
    setClaimCode: (code) => { kept = code; }, configure: (_c: Credentials) => undefined, connect: () => undefined,
  };
  assert.deepEqual(runCommand(target, 'set', JSON.stringify({ k: 'cc', v: 'c'.repeat(100) })).answer, { r: 0 });
  assert.equal(kept.length, CLAIM_CODE_MAX);
  assert.equal(CLAIM_CODE_MAX, 63);
});

test('a cellular device lists no networks, takes no Wi-Fi credentials, and connect-ap needs none', async () => {
  const { setup } = await listening({ platformId: 13 });
  assert.deepEqual((await http(setup, '/scan-ap')).json, { scans: [] });
  assert.match(String((await post(setup, 'configure-ap', '{"idx":0,"ssid":"home","sec":0,"ch":6}')).json.error), /cellular device has no Wi-Fi/);
  assert.deepEqual((await post(setup, 'connect-ap', '{"idx":0}')).json, { r: 0 });
  await eventually(() => (setup.active ? undefined : true));
});

test('listening mode on the older platforms needs 21.5 KB of free memory; refused, the device is untouched', async () => {
  const device = createDevice({ url: NOWHERE, id: ID, secret: 'x', platformId: 6, freeMemory: 20 * 1024 });
  devices.push(device);
  await assert.rejects(device.listen(), (err: Error) => err instanceof ListeningRefusedError && /needs 21\.5 KB of free memory on platform 6; 20\.0 KB is free/.test(err.message));
  assert.equal(device.state, 'connecting');
  // Enough memory, or a newer platform with the same memory: it enters.
  for (const options of [{ platformId: 6, freeMemory: 22 * 1024 }, { platformId: 12, freeMemory: 1024 }]) {
    const d = createDevice({ url: NOWHERE, id: ID, secret: 'x', ...options });
    devices.push(d);
    const s = await d.listen();
    await s.stop();
  }
});

test('ports: the ones asked for are used; a port that is taken is refused and the device stays as it was', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  const port = (taken.address() as { port: number }).port;
  try {
    const device = createDevice({ url: NOWHERE, id: ID, secret: 'x' });
    devices.push(device);
    await assert.rejects(device.listen({ httpPort: port }), /cannot listen on 127\.0\.0\.1/);
    taken.close();
    await once(taken, 'close');
    // Now free: asked for by number, both transports get what they asked for.
    const spare = createServer().listen(0, '127.0.0.1');
    await once(spare, 'listening');
    const tcpPort = (spare.address() as { port: number }).port;
    spare.close();
    await once(spare, 'close');
    const setup = await device.listen({ httpPort: port, tcpPort });
    assert.deepEqual([setup.http.port, setup.tcp.port], [port, tcpPort]);
    assert.equal(setup.http.url, `http://127.0.0.1:${port}`);
    const again = await device.listen();
    assert.equal(again, setup, 'asking again while listening answers the same session');
  } finally {
    if (taken.listening) taken.close();
  }
});

test('networks: each entry checked with a message naming it', () => {
  assert.throws(() => parseNetworks({}), /a JSON list/);
  assert.throws(() => parseNetworks([{ ssid: 'a', security: 'wpa3', password: 'x' }]), /networks\[0\]\.security: one of open, wep, wpa, wpa2, wpa2-enterprise/);
  assert.throws(() => parseNetworks([{ ssid: 'a', security: 'wpa2' }]), /networks\[0\]\.password/);
  assert.throws(() => parseNetworks([{ ssid: 'a' }, { ssid: 'b', rssi: 20 }]), /networks\[1\]\.rssi/);
  assert.throws(() => parseNetworks([{ ssid: 'a', channel: 0 }]), /channel/);
  assert.deepEqual(parseNetworks([{ ssid: 'a' }, { ssid: 'b', password: 'pw' }]), [
    { ssid: 'a', security: 'open', channel: 6, rssi: -60 },
    { ssid: 'b', security: 'wpa2', channel: 6, rssi: -60, password: 'pw' },
  ]);
});
