import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { manualClock, startTestServer, email, type TestServer } from '../helpers/server.js';
import { basic, raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { NotLoggedIn, NotYourDevice } from '../../examples/recommended-backend/backend.js';
import { runRecommendedBackend } from '../../examples/recommended-backend/demo.js';
import { runSimpleAuthApp } from '../../examples/simple-auth-app/demo.js';
import { runTwoLeggedServer } from '../../examples/two-legged-server/demo.js';
import type { ListeningLamp } from '../../examples/shared/lamp.js';
import { SoftApClient, SoftApError } from '../../examples/shared/softap.js';
import { NotLoggedIn as ServerNotLoggedIn } from '../../examples/two-legged-server/server.js';

/**
 * The three customer designs of docs/guides/, each example run end to end against a
 * real server with SDK devices. Every outcome the example reports is checked again here against
 * the API itself, so a design that leaks (a refused caller who gets through, a device claimed
 * where it must not be, a token that does not renew) fails.
 */
let server: TestServer;
// Time of the cloud's choosing, so that tokens expire when the test says, not after a sleep.
const clock = manualClock(new Date());
before(async () => { server = await startTestServer({ clock }); });
after(async () => { await server.close(); });

const get = (path: string, token: string) => raw(`${server.url}${path}`, { token });
const post = (path: string, token: string, json: unknown = {}) => raw(`${server.url}${path}`, { method: 'POST', token, json });

describe('recommended: the back-end makes every call, devices stay unclaimed', () => {
  test('owners reach their devices through the back-end, others are refused before Skyport is asked', async () => {
    // An owner of our own, so that the test can inspect the product the example used.
    const owner = await signUp(server.url);
    const product = await newProduct(server.url, owner.token, 'Recommended');
    const run = await runRecommendedBackend({ apiUrl: server.url, mqttUrl: server.mqttUrl, ownerToken: owner.token, product: String(product.id) });
    try {
      const [aliceLamp, bobLamp] = run.lamps;
      const { alice, bob } = run.sessions;
      assert.equal(run.product.id, product.id);
      assert.deepEqual(run.outcomes, { aliceCall: 1, aliceTemp: 21.5, bobRefused: `device ${aliceLamp.id}: it is not yours`, bobCall: 1 });
      // The calls reached the devices themselves.
      assert.equal(aliceLamp.on, true);
      assert.equal(bobLamp.on, true);

      // Bob is refused for Alice's lamp, reading as well as calling, and the lamp is untouched.
      await assert.rejects(run.backend.callFunction(bob, aliceLamp.id, 'led', 'off'), NotYourDevice);
      await assert.rejects(run.backend.getVariable(bob, aliceLamp.id, 'led'), NotYourDevice);
      assert.equal(aliceLamp.on, true);
      // Bob cannot take Alice's lamp into his account either.
      await assert.rejects(run.backend.addDevice(bob, aliceLamp.id), NotYourDevice);
      assert.deepEqual(run.backend.myDevices(bob), [bobLamp.id]);
      // A device that is not in the product cannot be added at all (Skyport answers 404).
      const elsewhere = await provision(server.url, owner.token, (await newProduct(server.url, owner.token, 'Elsewhere')).id);
      await assert.rejects(run.backend.addDevice(alice, elsewhere.id), (err: Error & { status?: number }) => err.status === 404);
      assert.deepEqual(run.backend.myDevices(alice), [aliceLamp.id]);

      // Alice turns her lamp off and reads it back through the back-end.
      assert.equal(await run.backend.callFunction(alice, aliceLamp.id, 'led', 'off'), 0);
      assert.equal(aliceLamp.on, false);
      assert.equal(await run.backend.getVariable(alice, aliceLamp.id, 'led'), false);
      assert.equal(await run.backend.isOnline(alice, aliceLamp.id), true);

      // The back-end's own accounts: a wrong password, an unknown user, a closed session.
      await assert.rejects(run.backend.logIn('alice', 'not her password'), NotLoggedIn);
      await assert.rejects(run.backend.logIn('mallory', 'alice password'), NotLoggedIn);
      run.backend.logOut(alice);
      await assert.rejects(run.backend.callFunction(alice, aliceLamp.id, 'led', 'on'), NotLoggedIn);
      assert.equal(aliceLamp.on, false);

      // Skyport heard of no customer and no claim: the product has no customers, the devices no owner.
      const customers = await get(`/v1/products/${product.id}/customers`, owner.token);
      assert.equal(customers.status, 200, customers.text);
      assert.equal(customers.json.meta.total, 0);
      for (const lamp of run.lamps) {
        const d = await get(`/v1/products/${product.id}/devices/${lamp.id}`, owner.token);
        assert.equal(d.status, 200, d.text);
        assert.equal(d.json.owner, null);
        assert.equal(d.json.product_id, product.id);
      }
      // The back-end's client acts for this product's fleet only.
      const cc = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(run.client.id, run.client.secret) }, form: { grant_type: 'client_credentials' } });
      assert.equal(cc.status, 200, cc.text);
      assert.equal((await post(`/v1/products/${product.id}/devices/${aliceLamp.id}/led`, cc.json.access_token, { arg: 'on' })).json.return_value, 1);
      assert.equal((await post(`/v1/products/${product.id}/devices/${elsewhere.id}/led`, cc.json.access_token, { arg: 'on' })).status, 404);
      assert.equal((await get(`/v1/user`, cc.json.access_token)).status, 403);
    } finally {
      await run.close();
    }
  });

  test('runs on its own: signs up an owner and makes a product when given none', async () => {
    const lines: string[] = [];
    const run = await runRecommendedBackend({ apiUrl: server.url, mqttUrl: server.mqttUrl, log: (l) => lines.push(l) });
    try {
      assert.equal(run.outcomes.aliceCall, 1);
      assert.match(lines.join('\n'), /refused by the back-end for alice's lamp/);
    } finally {
      await run.close();
    }
  });
});

/**
 * What the lamp went through in its setup, as its own progress says: a first join that failed
 * (the typo) and back to listening on the same ports, then joined, online, claimed.
 */
async function assertSetUpAfterATypo(lamp: ListeningLamp): Promise<void> {
  await lamp.done;
  assert.equal(lamp.device.claimed, true);
  const steps = lamp.progress.map((p) => p.step).filter((s) => s !== 'command');
  const failed = steps.indexOf('join-failed');
  assert.ok(failed > 0, `a failed join: ${steps.join(', ')}`);
  assert.equal(steps.indexOf('listening', failed), failed + 1, `back to listening after the failed join: ${steps.join(', ')}`);
  assert.deepEqual(steps.slice(-3), ['joined', 'online', 'claimed'], steps.join(', '));
  assert.equal(steps.filter((s) => s === 'joined').length, 1, steps.join(', '));
}

describe('simple authentication: the app creates customers, the device claims itself', () => {
  test('the app sets the lamp up over TCP (a mistyped Wi-Fi password first); the customer reaches the device it claimed, another customer does not', async () => {
    const owner = await signUp(server.url);
    const product = await newProduct(server.url, owner.token, 'Simple');
    const run = await runSimpleAuthApp({ apiUrl: server.url, mqttUrl: server.mqttUrl, ownerToken: owner.token, product: product.slug, setupProtocol: 'tcp' });
    try {
      const { lamp, alice, bob } = run;
      assert.deepEqual(run.outcomes, {
        setup: { protocol: 'tcp', attempts: ['wifi-join-failed', 'online'] },
        aliceDevices: [lamp.id], aliceCall: 1, aliceTemp: 21.5,
        bobRefused: { status: 403, error: 'Permission Denied' }, aliceAgain: 0,
      });
      assert.equal(lamp.on, false, 'the last call (led off) reached the lamp');
      await assertSetUpAfterATypo(lamp);
      // Out of listening mode: the setup ports no longer answer.
      await assert.rejects(new SoftApClient(lamp.address('tcp'), 1000).deviceInfo(), SoftApError);

      // Skyport's record: the lamp is owned by Alice's customer; both customers exist, neither a shadow.
      const d = await get(`/v1/products/${product.id}/devices/${lamp.id}`, owner.token);
      assert.equal(d.json.owner, alice.email);
      const customers = await get(`/v1/products/${product.id}/customers`, owner.token);
      const byName = new Map<string, { shadow: boolean; devices: string[] }>(customers.json.customers.map((c: { username: string; shadow: boolean; devices: string[] }) => [c.username, c]));
      assert.deepEqual(byName.get(alice.email), { ...byName.get(alice.email), shadow: false, devices: [lamp.id] });
      assert.deepEqual(byName.get(bob.email)?.devices, []);

      // Alice's token works directly against the API; Bob's does not, for calls, reads or the record.
      assert.equal((await post(`/v1/devices/${lamp.id}/led`, alice.app.accessToken, { arg: 'on' })).json.return_value, 1);
      assert.equal(lamp.on, true);
      for (const r of [
        await post(`/v1/devices/${lamp.id}/led`, bob.app.accessToken, { arg: 'off' }),
        await get(`/v1/devices/${lamp.id}/temp`, bob.app.accessToken),
        await get(`/v1/devices/${lamp.id}`, bob.app.accessToken),
      ]) assert.equal(r.status, 403, r.text);
      assert.equal(lamp.on, true);
      assert.deepEqual((await get('/v1/devices', bob.app.accessToken)).json, []);
      // Bob's claim code cannot take a device Alice has.
      const bobCode = await post(`/v1/products/${product.id}/device_claims`, bob.app.accessToken);
      await assert.rejects(lamp.device.claim(bobCode.json.claim_code as string), /device_claimed/);
      // Customer tokens never reach the console routes.
      assert.equal((await get(`/v1/products/${product.id}/devices`, alice.app.accessToken)).status, 403);

      // What the credentials built into the app give whoever digs them out: customer creation only.
      const appClient = { authorization: basic(run.client.id, run.client.secret) };
      const cc = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: appClient, form: { grant_type: 'client_credentials' } });
      assert.equal(cc.status, 200, cc.text);
      assert.equal(cc.json.scope, 'customers:create');
      assert.equal((await get(`/v1/products/${product.id}/devices`, cc.json.access_token)).status, 403);
      assert.equal((await get(`/v1/products/${product.id}/customers`, cc.json.access_token)).status, 403);
      assert.equal((await post(`/v1/products/${product.id}/devices/${lamp.id}/led`, cc.json.access_token, { arg: 'off' })).status, 403);
      const mint = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: appClient, form: { grant_type: 'client_credentials', scope: `customer=${alice.email}` } });
      assert.equal(mint.status, 400);
      assert.equal(mint.json.error, 'invalid_scope');
      const guess = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: appClient, form: { grant_type: 'password', username: alice.email, password: 'a guess' } });
      assert.equal(guess.status, 400);
      assert.equal(guess.json.error, 'invalid_grant');
      assert.equal(lamp.on, true);
    } finally {
      await run.close();
    }
  });
});

describe('two-legged: the server keeps the accounts and mints customer tokens', () => {
  test('the app sets the lamp up over HTTP with the minted token (a mistyped password first); a fresh token per log-in, renewed with the refresh token; the owner reaches the device, another user does not', async () => {
    const owner = await signUp(server.url);
    const product = await newProduct(server.url, owner.token, 'Two-legged');
    const lifetime = 600;
    const run = await runTwoLeggedServer({ apiUrl: server.url, mqttUrl: server.mqttUrl, ownerToken: owner.token, product: String(product.id), customerTokenLifetimeSeconds: lifetime, setupProtocol: 'http' });
    try {
      const { lamp, alice, bob, tokens } = run;
      assert.deepEqual(run.outcomes, {
        setup: { protocol: 'http', attempts: ['wifi-join-failed', 'online'] },
        aliceDevices: [lamp.id], aliceCall: 1, aliceTemp: 21.5, aliceRenewedCall: 0,
        bobRefused: { status: 403, error: 'Permission Denied' },
      });
      assert.equal(lamp.on, false);
      await assertSetUpAfterATypo(lamp);
      assert.equal(new Set([tokens.signUp, tokens.logIn, tokens.renewed]).size, 3, 'three distinct tokens');

      // Shadow customers, no passwords; the lamp is Alice's.
      const customers = await get(`/v1/products/${product.id}/customers`, owner.token);
      const byName = new Map<string, { shadow: boolean; devices: string[] }>(customers.json.customers.map((c: { username: string; shadow: boolean; devices: string[] }) => [c.username, c]));
      assert.equal(byName.get(alice.email)?.shadow, true);
      assert.deepEqual(byName.get(alice.email)?.devices, [lamp.id]);
      assert.equal(byName.get(bob.email)?.shadow, true);
      assert.equal((await get(`/v1/products/${product.id}/devices/${lamp.id}`, owner.token)).json.owner, alice.email);
      // A shadow customer cannot log in to Skyport with any password.
      const shadowLogin = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(run.client.id, run.client.secret) }, form: { grant_type: 'password', username: alice.email, password: 'alice password' } });
      assert.equal(shadowLogin.status, 400);

      // The minted token is a customer token for Alice, with the lifetime the server asked for.
      const current = await get('/v1/access_tokens/current', tokens.renewed);
      assert.equal(current.status, 200, current.text);
      assert.equal(Date.parse(current.json.expires_at as string) - clock.now().getTime(), lifetime * 1000);
      // Bob's token: refused by Skyport for Alice's lamp, in every form.
      assert.equal((await post(`/v1/devices/${lamp.id}/led`, bob.app.accessToken, { arg: 'on' })).status, 403);
      assert.equal((await get(`/v1/devices/${lamp.id}/temp`, bob.app.accessToken)).status, 403);
      assert.deepEqual((await get('/v1/devices', bob.app.accessToken)).json, []);
      assert.equal(lamp.on, false);

      // The token expires; the app's next call gets 401, has it renewed by the server, and succeeds.
      const before = alice.app.renewals;
      const held = alice.app.accessToken;
      // Ten minutes pass by the cloud's clock: the lamp, silent that long, is dropped by the
      // keep-alive sweep and reconnects; the calls below need it back.
      const reconnected = once(lamp.device, 'offline').then(() => once(lamp.device, 'online'));
      clock.advance(lifetime * 1000);
      await reconnected;
      assert.equal((await post(`/v1/devices/${lamp.id}/led`, held, { arg: 'on' })).status, 401);
      assert.equal(await alice.app.callFunction(lamp.id, 'led', 'on'), 1);
      assert.equal(lamp.on, true);
      assert.equal(alice.app.renewals, before + 1);
      assert.notEqual(alice.app.accessToken, held);
      assert.equal((await get(`/v1/devices/${lamp.id}/led`, alice.app.accessToken)).json.result, true);

      // Each log-in mints a fresh token; both stay valid; a wrong password mints nothing.
      const phone1 = alice.app.accessToken;
      await alice.app.logIn(alice.email, alice.password);
      assert.notEqual(alice.app.accessToken, phone1);
      assert.equal((await get(`/v1/devices/${lamp.id}/temp`, alice.app.accessToken)).json.result, 21.5);
      await assert.rejects(run.server.logIn(alice.email, 'not her password'), ServerNotLoggedIn);
      await assert.rejects(run.server.logIn(email('nobody'), 'alice password'), ServerNotLoggedIn);
      // The e-mail is taken in any letter case, in the server's table as in Skyport.
      await assert.rejects(run.server.signUp(alice.email.toUpperCase(), 'x'), /taken/);

      // Log-out revokes the refresh token and the token made with it.
      const lastToken = alice.app.accessToken;
      await alice.app.logOut();
      assert.equal((await get(`/v1/devices/${lamp.id}/temp`, lastToken)).status, 401);
      await assert.rejects(alice.app.renew(), ServerNotLoggedIn);
    } finally {
      await run.close();
    }
  });
});

test('the documented command lines run each example against a server and end with done', async () => {
  const run = (example: string) => new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `examples/${example}/main.ts`, '--api-url', server.url, '--mqtt-url', server.mqttUrl], { env: { ...process.env, SKYPORT_TOKEN: '' } });
    let out = '';
    child.stdout.on('data', (d) => { out += String(d); });
    child.stderr.on('data', (d) => { out += String(d); });
    child.on('close', (code) => resolve({ code, out }));
  });
  const results = await Promise.all(['recommended-backend', 'simple-auth-app', 'two-legged-server'].map(run));
  for (const { code, out } of results) {
    assert.equal(code, 0, out);
    assert.match(out, /^done: /m);
  }
  assert.match(results[1]!.out, /bob: his token gets 403 Permission Denied/);
  // The older designs set their lamp up from the app: a typo, the lamp back in listening mode, then online.
  for (const { out } of results.slice(1)) {
    assert.match(out, /phone: device [0-9a-f]{24} could not join "alice-home" and is back in listening mode[^]*phone: device [0-9a-f]{24} is online and among the customer's devices/);
  }
});
