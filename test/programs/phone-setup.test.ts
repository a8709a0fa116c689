import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { HOME_NETWORKS, HOME_WIFI, startListeningLamp } from '../../examples/shared/lamp.js';
import { createProductClient } from '../../examples/shared/owner.js';
import { NetworkNotFound, SetupTimeout, setUpDevice, WifiJoinFailed } from '../../examples/shared/setup.js';
import { SoftApClient, SoftApError } from '../../examples/shared/softap.js';
import { MobileApp } from '../../examples/simple-auth-app/app.js';

/**
 * The phone's side of device setup the older designs' examples share (examples/shared/setup.ts,
 * over softap-setup): how it fails. The designs' successful setups are in guides.test.ts.
 */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

/** A customer of a Wi-Fi product with a lamp of that product in listening mode. */
async function customerAndLamp() {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token, 'Setup', 12);
  const client = await createProductClient(server.url, owner.token, product, { name: 'app', scope: 'customers:create' });
  const app = new MobileApp({ apiUrl: server.url, product: product.id, client });
  await app.signUp(`setup-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`, 'a password');
  const lamp = await startListeningLamp(server.mqttUrl, await provision(server.url, owner.token, product.id), { networks: HOME_NETWORKS });
  const claimCode = async (): Promise<string> => {
    const r = await fetch(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', headers: { authorization: `Bearer ${app.accessToken}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(r.status, 200);
    return ((await r.json()) as { claim_code: string }).claim_code;
  };
  return { app, lamp, claimCode };
}

describe('device setup from the phone', () => {
  test('a network the device does not see is named, and the device stays in listening mode', async () => {
    const { app, lamp, claimCode } = await customerAndLamp();
    try {
      const err = await setUpDevice({ device: lamp.address('http'), claimCode: await claimCode(), wifi: { ssid: 'nowhere', password: 'x' }, listDevices: () => app.listDevices() }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof NetworkNotFound, String(err));
      assert.match(err.message, /"nowhere".*"alice-home", "next-door"/);
      assert.equal((await new SoftApClient(lamp.address('tcp')).deviceInfo()).id, lamp.id);
      assert.equal(lamp.device.connected, false);
    } finally {
      await lamp.close();
    }
  });

  test('a wrong password: WifiJoinFailed, the device back in listening mode on the same ports, and a retry over the other protocol succeeds', async () => {
    const { app, lamp, claimCode } = await customerAndLamp();
    try {
      const code = await claimCode();
      const err = await setUpDevice({ device: lamp.address('http'), claimCode: code, wifi: { ssid: HOME_WIFI.ssid, password: HOME_WIFI.typo }, listDevices: () => app.listDevices() }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof WifiJoinFailed, String(err));
      assert.equal(err.deviceId, lamp.id);
      assert.match(err.message, /could not join "alice-home".*try again/);
      assert.deepEqual(await app.listDevices(), []);
      assert.equal((await new SoftApClient(lamp.address('http')).deviceInfo()).id, lamp.id);
      const done = await setUpDevice({ device: lamp.address('tcp'), claimCode: code, wifi: { ssid: HOME_WIFI.ssid, password: HOME_WIFI.password }, listDevices: () => app.listDevices() });
      assert.equal(done.deviceId, lamp.id);
      assert.deepEqual((await app.listDevices()).map((d) => [d.id, d.online]), [[lamp.id, true]]);
      assert.equal(await app.callFunction(lamp.id, 'led', 'on'), 1);
      assert.equal(lamp.on, true);
    } finally {
      await lamp.close();
    }
  });

  test('a claim code the cloud refuses: the device comes online but never among the customer\'s devices, and the wait says so', async () => {
    const { app, lamp } = await customerAndLamp();
    try {
      const err = await setUpDevice({
        device: lamp.address('tcp'), claimCode: 'not-a-claim-code-'.padEnd(48, 'x'), wifi: { ssid: HOME_WIFI.ssid, password: HOME_WIFI.password },
        listDevices: () => app.listDevices(), onlineTimeoutMs: 2000,
      }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof SetupTimeout, String(err));
      assert.match(err.message, /not online among your devices .*claim code was refused/);
      await lamp.done;
      assert.equal(lamp.device.connected, true);
      assert.equal(lamp.device.claimed, false);
      assert.ok(lamp.progress.some((p) => p.step === 'claim-failed'), lamp.progress.map((p) => p.step).join(', '));
      assert.deepEqual(await app.listDevices(), []);
    } finally {
      await lamp.close();
    }
  });
});

describe('the softap-setup adapter', () => {
  /** A setup port that answers every command with `reply` (undefined: closes without a word). */
  async function scriptedDevice(reply: string | undefined): Promise<{ port: number; close: () => Promise<void> }> {
    const srv = net.createServer((sock) => sock.once('data', () => sock.end(reply === undefined ? '' : `\n\n${reply}`)));
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    return { port: (srv.address() as net.AddressInfo).port, close: () => new Promise((resolve) => srv.close(() => resolve())) };
  }

  test('refusals and silences settle each command once, with the device\'s reason, where the library would throw or call back twice', async () => {
    for (const [reply, reason] of [['{"r":-1,"error":"bad claim code"}', /refused by the device \(r=-1: bad claim code\)/], [undefined, /without an answer/]] as const) {
      const device = await scriptedDevice(reply);
      try {
        const client = new SoftApClient({ protocol: 'tcp', host: '127.0.0.1', port: device.port });
        // publicKey, deviceInfo and scan would throw out of a socket handler; set and connect call back twice.
        for (const command of [() => client.publicKey(), () => client.deviceInfo(), () => client.scan(), () => client.setClaimCode('code'), () => client.connect()]) {
          await assert.rejects(command(), (err: Error) => err instanceof SoftApError && reason.test(err.message));
        }
        // Arguments the library throws at: a rejection too.
        await assert.rejects(client.configure({ ssid: 'x', security: 'wpa2', password: 'p', channel: 1 }), /public key/);
      } finally {
        await device.close();
      }
    }
  });

  test('a network name the library cannot frame (non-ASCII) is refused before it is sent, saying why', async () => {
    const device = await scriptedDevice('{"b":"00","r":0}');
    try {
      const client = new SoftApClient({ protocol: 'tcp', host: '127.0.0.1', port: device.port });
      await assert.rejects(client.configure({ ssid: 'Café', security: 0, channel: 6 }), /cannot send the network name "Café".*non-ASCII/);
    } finally {
      await device.close();
    }
  });

  test('a device that is not there: a refused connection, as an error', async () => {
    const device = await scriptedDevice(undefined);
    await device.close();
    await assert.rejects(new SoftApClient({ protocol: 'http', host: '127.0.0.1', port: device.port }, 1000).deviceInfo(), /ECONNREFUSED/);
  });
});
