import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDevice, type Device, type SetupProgress } from '../src/sdk/index.js';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { PASSWORD, newProduct, signUp } from './helpers/fixtures.js';
import { provision, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { openEventStream } from './helpers/sse.js';
import { softap } from './helpers/softap.js';

/**
 * Device setup end to end (docs/sdk.md, "Listening mode"): a simulated device in listening mode
 * is given a customer's claim code and Wi-Fi credentials by Particle's own setup client, joins,
 * connects, presents the code and becomes the customer's; the customer's token then reaches it.
 */
let server: TestServer;
let owner: string;
const HOME = { ssid: 'home', password: 'correct horse battery', security: 'wpa2' as const, channel: 6, rssi: -50 };
const devices: Device[] = [];
before(async () => {
  server = await startTestServer();
  ({ token: owner } = await signUp(server.url));
});
after(async () => {
  await Promise.all(devices.map((d) => d.close()));
  await server.close();
});

/** A product of `platformId`, a customers:create client of it, a customer with a token, and a device identity. */
async function customerAndDevice(platformId = 12) {
  const product = await newProduct(server.url, owner, 'Lamps', platformId);
  const client = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
  assert.equal(client.status, 201, client.text);
  const creds = { id: client.json.client.id as string, secret: client.json.client.secret as string };
  const customer = email();
  const made = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(creds.id, creds.secret) }, form: { email: customer, password: PASSWORD } });
  assert.equal(made.status, 201, made.text);
  const token = made.json.access_token as string;
  const identity = await provision(server.url, owner, product.id);
  return { product, customer, token, identity };
}

function lamp(identity: Identity, options: { platformId?: number; freeMemory?: number } = {}) {
  let on = false;
  const device = createDevice({ url: server.mqttUrl, id: identity.id, secret: identity.secret, reconnect: { minMs: 50, maxMs: 200 }, ...options });
  device.function('led', (arg) => { on = arg === 'on'; return on ? 1 : 0; });
  devices.push(device);
  return { device, isOn: () => on };
}

async function claimCode(productId: number, token: string): Promise<string> {
  const r = await raw(`${server.url}/v1/products/${productId}/device_claims`, { method: 'POST', token, json: {} });
  assert.equal(r.status, 200, r.text);
  return r.json.claim_code as string;
}

for (const protocol of ['http', 'tcp'] as const) {
  test(`simple authentication over ${protocol}: a wrong password, a retry, then claimed and called with the customer's token`, async () => {
    const { product, customer, token, identity } = await customerAndDevice();
    const { device, isOn } = lamp(identity);
    const setup = await device.listen({ networks: [HOME, { ssid: 'cafe', security: 'open', channel: 11, rssi: -70 }] });
    const progress: SetupProgress[] = [];
    setup.on('progress', (p: SetupProgress) => progress.push(p));
    const stream = await openEventStream(`${server.url}/v1/devices/events`, token);
    try {
      const app = softap(setup.http.host, protocol === 'http' ? setup.http.port : setup.tcp.port, protocol);
      assert.deepEqual(await app.deviceInfo(), { id: identity.id, claimed: false });
      await app.setClaimCode(await claimCode(product.id, token));
      const home = (await app.scan()).find((n) => n.ssid === 'home');
      assert.ok(home);
      await app.publicKey();
      await app.configure({ ssid: 'home', security: home.sec, password: 'correct horse battry', channel: home.ch });
      await app.connect();
      // Back in listening mode: the app finds the device answering again, still unclaimed.
      await eventually(() => (progress.filter((p) => p.step === 'listening').length === 1 ? true : undefined));
      assert.deepEqual(await app.deviceInfo(), { id: identity.id, claimed: false });
      assert.equal((await raw(`${server.url}/v1/devices`, { token })).json.length, 0);

      await app.publicKey();
      await app.configure({ ssid: 'home', security: home.sec, password: HOME.password, channel: home.ch });
      await app.connect();
      assert.deepEqual(await setup.done, { claimed: true });
      assert.equal(device.claimed, true);
      assert.deepEqual(progress.filter((p) => p.step !== 'command').map((p) => p.step),
        ['configured', 'configured', 'joining', 'join-failed', 'listening', 'configured', 'joining', 'joined', 'online', 'claimed']);

      // The customer's token lists it and reaches it; the owner of the claim is that customer.
      const listed = (await raw(`${server.url}/v1/devices`, { token })).json as Array<{ id: string; online: boolean }>;
      assert.deepEqual(listed.map((d) => [d.id, d.online]), [[identity.id, true]]);
      const call = await raw(`${server.url}/v1/devices/${identity.id}/led`, { method: 'POST', token, json: { arg: 'on' } });
      assert.equal(call.status, 200, call.text);
      assert.equal(call.json.return_value, 1);
      assert.equal(isOn(), true);
      const seen = await raw(`${server.url}/v1/products/${product.id}/devices/${identity.id}`, { token: owner });
      assert.equal(seen.json.owner, customer);
      // The customer's event stream saw the claim happen.
      const claimed = await eventually(() => stream.events.find((e) => e.name === 'spark/device/claimed'));
      assert.equal(claimed.coreid, identity.id);
      assert.equal(claimed.data, 'claimed');

      // In listening mode again later, the device says it is claimed.
      const again = await device.listen();
      assert.deepEqual(await softap(again.http.host, again.tcp.port, 'tcp').deviceInfo(), { id: identity.id, claimed: true });
      await again.stop();
    } finally {
      stream.close();
    }
  });
}

test('a claim code the cloud refuses: the device goes online unclaimed and says why', async () => {
  const { token, identity } = await customerAndDevice();
  const { device } = lamp(identity);
  const setup = await device.listen({ networks: [HOME] });
  const app = softap(setup.http.host, setup.http.port, 'http');
  await app.setClaimCode('not-a-code-the-cloud-gave');
  await app.publicKey();
  await app.configure({ ssid: 'home', security: 'wpa2_aes', password: HOME.password, channel: 6 });
  await app.connect();
  assert.deepEqual(await setup.done, { claimed: false, error: 'claim_code_invalid' });
  assert.equal(device.claimed, false);
  assert.equal(device.state, 'online');
  assert.equal((await raw(`${server.url}/v1/devices`, { token })).json.length, 0);
});

test('a cellular device: a claim code and connect-ap, no Wi-Fi step', async () => {
  const { product, token, identity } = await customerAndDevice(13);
  const { device } = lamp(identity, { platformId: 13 });
  const setup = await device.listen();
  const app = softap(setup.tcp.host, setup.tcp.port, 'tcp');
  assert.deepEqual(await app.scan(), []);
  await app.setClaimCode(await claimCode(product.id, token));
  await app.connect();
  assert.deepEqual(await setup.done, { claimed: true });
  const listed = (await raw(`${server.url}/v1/devices`, { token })).json as Array<{ id: string }>;
  assert.deepEqual(listed.map((d) => d.id), [identity.id]);
});

test('an online device short of memory refuses listening mode and keeps running', async () => {
  const { identity } = await customerAndDevice(6);
  const { device } = lamp(identity, { platformId: 6, freeMemory: 16 * 1024 });
  await device.connect();
  await assert.rejects(device.listen(), /needs 21\.5 KB of free memory/);
  assert.equal(device.state, 'online');
  const call = await raw(`${server.url}/v1/devices/${identity.id}/led`, { method: 'POST', token: owner, json: { arg: 'on' } });
  assert.equal(call.json.return_value, 1, call.text);
});

test('an online device that enters listening mode leaves the cloud until it is set up again', async () => {
  const { identity } = await customerAndDevice();
  const { device } = lamp(identity);
  await device.connect();
  const setup = await device.listen({ networks: [HOME] });
  const offline = async () => ((await raw(`${server.url}/v1/devices/${identity.id}`, { token: owner })).json.online === false ? true : undefined);
  await eventually(offline);
  // No reconnect behind the app's back while it listens.
  assert.equal(device.state, 'connecting');
  const app = softap(setup.http.host, setup.http.port, 'http');
  await app.publicKey();
  await app.configure({ ssid: 'home', security: 'wpa2_aes', password: HOME.password, channel: 6 });
  await app.connect();
  assert.equal(await setup.done, undefined, 'no claim code was given');
  assert.equal(device.state, 'online');
  await eventually(async () => ((await raw(`${server.url}/v1/devices/${identity.id}`, { token: owner })).json.online === true ? true : undefined));
});
