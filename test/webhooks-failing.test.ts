import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDevice, type Device } from '../src/sdk/index.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { raw } from './helpers/http.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * A webhook's failing mark (docs/webhooks.md, "Retries"): set by its first failed delivery,
 * shown as failing_since, and cleared by its next success, which the five days before a failing
 * webhook is disabled count from.
 */
let server: TestServer;
let receiver: Receiver;
let owner: string;
let productId: number;
let device: Device;
before(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
  receiver = await startReceiver();
  ({ token: owner } = await signUp(server.url));
  productId = (await newProduct(server.url, owner)).id;
  const who = await provision(server.url, owner, productId);
  device = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret });
  await device.connect();
});
after(async () => {
  await device.close();
  await receiver.close();
  await server.close();
});

test('a webhook that failed and then delivered is failing no more', async () => {
  receiver.answer({ status: 500, body: 'down' });
  const created = await raw(`${server.url}/v1/products/${productId}/webhooks`, { method: 'POST', token: owner, json: { event: 'flaky', url: `${receiver.url}/flaky` } });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const view = async () => (await raw(`${server.url}/v1/products/${productId}/webhooks/${id}`, { token: owner })).json;
  await device.publish('flaky', 'first');
  const since = await eventually(async () => ((await view()).failing_since as string | null) ?? undefined, 5000, 'failing_since is set by the failed delivery');
  // More failures keep the first time.
  await device.publish('flaky', 'second');
  await eventually(() => (receiver.received.length >= 2 ? true : undefined), 5000);
  await eventually(async () => ((await view()).failing_since === since ? true : undefined), 5000, 'failing_since stays the first failure\'s');
  receiver.answer({ status: 200, body: 'ok' });
  await device.publish('flaky', 'third');
  await eventually(async () => ((await view()).failing_since === null ? true : undefined), 5000, 'a success clears failing_since');
});

test('an answer with a NUL byte is logged with it replaced; its attempt is recorded, not sent again', async () => {
  receiver.answer((r) => (r.url === '/nul' ? { status: 200, body: 'ok\u0000done' } : { status: 200, body: 'ok' }));
  const created = await raw(`${server.url}/v1/products/${productId}/webhooks`, { method: 'POST', token: owner, json: { event: 'nul', url: `${receiver.url}/nul` } });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  await device.publish('nul', 'x');
  const log = await eventually(async () => {
    const answer = await raw(`${server.url}/v1/products/${productId}/webhooks/${id}/deliveries`, { token: owner });
    const first = (answer.json.deliveries as Array<{ status: string; attempts: Array<{ answer: string | null }> }>)[0];
    return first?.status === 'delivered' ? first : undefined;
  }, 5000, 'the delivery is recorded as delivered');
  assert.equal(log.attempts[0]?.answer, 'ok\uFFFDdone');
  assert.equal(receiver.received.filter((r) => r.url === '/nul').length, 1);
});
