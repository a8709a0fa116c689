import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDevice, type Device } from '../src/sdk/index.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { openEventStream } from './helpers/sse.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * One failing host cannot slow the others (docs/webhooks.md, "Retries"): deliveries to a host
 * are bounded, and a host whose answers are mostly errors is let sleep a few seconds (Particle's
 * "too many errors"), its deliveries skipped for then and said as hook-error.
 */
let server: TestServer;
let healthy: Receiver;
let failing: Receiver;
let owner: string;
let productId: number;
let device: Device;
before(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1,127.0.0.2,127.0.0.3', WEBHOOK_HOST_CONCURRENCY: '2', WEBHOOK_TIMEOUT_SECONDS: '5' } });
  [healthy, failing] = await Promise.all([startReceiver('127.0.0.1'), startReceiver('127.0.0.2')]);
  ({ token: owner } = await signUp(server.url));
  productId = (await newProduct(server.url, owner)).id;
  const who = await provision(server.url, owner, productId);
  device = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret });
  await device.connect();
});
after(async () => {
  await device.close();
  await Promise.all([healthy.close(), failing.close()]);
  await server.close();
});

const create = (event: string, url: string) => server.skyport.services.webhooks.manage.create({ kind: 'product', productId }, { event, url }, { account: { kind: 'product', id: String(productId) }, ip: null });

test('a host that hangs holds at most its own slots: another host gets each event at once', async () => {
  failing.answer('hang');
  await create('both', `${failing.url}/hang`);
  await create('both', `${healthy.url}/ok`);
  for (let i = 0; i < 6; i++) await device.publish('both', String(i));
  // Six to each; the hanging host has two in flight (WEBHOOK_HOST_CONCURRENCY) and the rest wait.
  await eventually(() => (healthy.received.filter((r) => r.url === '/ok').length === 6 ? true : undefined), 3000, 'the healthy host got all six while the other hangs');
  assert.equal(failing.received.length, 2);
});

test('a host answering mostly errors sleeps: its next deliveries are skipped for a few seconds and said as hook-error', async () => {
  const stream = await openEventStream(`${server.url}/v1/products/${productId}/events`, owner);
  try {
    // A host of its own: the hanging one of the test above still holds its slots.
    const broken = await startReceiver('127.0.0.3');
    broken.answer({ status: 500, body: 'no' });
    try {
      const { webhook } = await create('err', `${broken.url}/err`);
      for (let i = 0; i < 8; i++) await device.publish('err', String(i));
      const said = await eventually(() => stream.events.find((e) => e.name === 'hook-error/err/0' && /Sleeping, too many errors/.test(e.data ?? '')), 8000);
      assert.equal(said.coreid, 'particle-internal');
      const counts = await eventually(async () => {
        const c = await server.skyport.services.webhooks.manage.counts(webhook);
        return c.failed >= 5 && c.skipped >= 1 ? c : undefined;
      });
      assert.equal(counts.delivered, 0);
      // Skipped deliveries are not lost: they wait for the host, pending.
      assert.ok(counts.pending >= 1);
    } finally {
      await broken.close();
    }
  } finally {
    stream.close();
  }
});
