import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { createDevice, type Device } from '../src/sdk/index.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { raw } from './helpers/http.js';
import { provision, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { openEventStream } from './helpers/sse.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { createWebhooksRepository, type WebhookRecord } from '../src/repositories/webhooks.repository.js';

/**
 * Webhook deliveries against real receivers on loopback ports (docs/webhooks.md): what is sent,
 * signed as Standard Webhooks say, what comes back as events, and what a failing receiver gets:
 * retries on the schedule, Retry-After, 410, the destination checks at connection time.
 */
let server: TestServer;
let receiver: Receiver;
let owner: string;
let productId: number;
const clock = manualClock(new Date());
const devices: Device[] = [];
before(async () => {
  server = await startTestServer({ clock, env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_TIMEOUT_SECONDS: '1' } });
  receiver = await startReceiver();
  ({ token: owner } = await signUp(server.url));
  productId = (await newProduct(server.url, owner)).id;
});
after(async () => {
  await Promise.all(devices.map((d) => d.close()));
  await receiver.close();
  await server.close();
});

const actor = { account: { kind: 'product' as const, id: '0' }, ip: null };
const hooks = () => server.skyport.services.webhooks;

async function webhook(input: Record<string, unknown>): Promise<{ webhook: WebhookRecord; secret: string }> {
  return hooks().manage.create({ kind: 'product', productId }, { url: receiver.url, ...input }, actor);
}

async function device(): Promise<{ d: Device; who: Identity }> {
  const who = await provision(server.url, owner, productId);
  // No keep-alive: the tests move the server's clock by days, on which the gateway measures a
  // connection's silence, and a sweep between a jump and the device's next packet would drop it.
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, keepalive: 0, reconnect: { minMs: 50, maxMs: 200 } });
  devices.push(d);
  await d.connect();
  return { d, who };
}

/** The requests the receiver got for `path` (each test sends to a path of its own). */
const at = (path: string) => receiver.received.filter((r) => r.url.split('?')[0] === path);

describe('what is sent', () => {
  test('a device event: Particle\'s form fields, its User-Agent, and a Standard Webhooks signature that verifies', async () => {
    const { webhook: w, secret } = await webhook({ event: 'temp', url: `${receiver.url}/form` });
    assert.match(secret, /^whsec_/);
    const { d, who } = await device();
    await d.publish('temperature', '21.5');
    const [r] = await eventually(() => (at('/form').length === 1 ? at('/form') : undefined));
    assert.ok(r);
    assert.equal(r.method, 'POST');
    assert.equal(r.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.equal(r.headers['user-agent'], 'ParticleBot/1.1');
    const form = Object.fromEntries(new URLSearchParams(r.body));
    assert.deepEqual({ ...form, published_at: 'x' }, { event: 'temperature', data: '21.5', coreid: who.id, published_at: 'x', userid: '', fw_version: '', productID: String(productId) });
    assert.ok(!Number.isNaN(Date.parse(form.published_at as string)));
    // As a receiver verifies it: the id, the time and the body under the webhook's secret. The
    // package parses the body as JSON once the signature holds: a form body gets that far.
    assert.throws(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>), SyntaxError);
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(r.body, r.headers as Record<string, string>), WebhookVerificationError);
    assert.match(String(r.headers['webhook-id']), /^msg_/);
    // Not triggered: another prefix.
    await d.publish('humidity', '40');
    await d.publish('temp', '22');
    await eventually(() => (at('/form').length === 2 ? true : undefined));
    assert.equal(Object.fromEntries(new URLSearchParams(at('/form')[1]?.body)).data, '22');
    await hooks().manage.remove(w, actor);
  });

  test('GET: the default fields in the query string, no body', async () => {
    await webhook({ event: 'get-me', url: `${receiver.url}/get`, requestType: 'GET' });
    const { d, who } = await device();
    await d.publish('get-me', 'x y');
    const [r] = await eventually(() => (at('/get').length === 1 ? at('/get') : undefined));
    assert.equal(r?.method, 'GET');
    assert.equal(r?.body, '');
    const q = new URL(r?.url ?? '', receiver.url).searchParams;
    assert.deepEqual([q.get('event'), q.get('data'), q.get('coreid')], ['get-me', 'x y', who.id]);
  });

  test('templates: json with Particle\'s variables and the data\'s keys, {{ }} escapes and {{{ }}} does not; query, headers, auth; the signature verifies the JSON', async () => {
    const { secret } = await webhook({
      event: 'tpl', url: `${receiver.url}/json/{{PARTICLE_EVENT_NAME}}`, requestType: 'PUT', noDefaults: true,
      json: { device: '{{PARTICLE_DEVICE_ID}}', raw: '{{{note}}}', escaped: '{{note}}', temp: '{{temp}}', nested: { product: '{{PRODUCT_ID}}' }, id: '{{PARTICLE_EVENT_ID}}' },
      query: { t: '{{temp}}' }, headers: { 'X-Device': '{{PARTICLE_DEVICE_ID}}' }, auth: { username: 'hook', password: 's3cret' },
    });
    const { d, who } = await device();
    await d.publish('tpl', JSON.stringify({ temp: 21.5, note: '<b>&' }));
    const [r] = await eventually(() => (at('/json/tpl').length === 1 ? at('/json/tpl') : undefined));
    assert.equal(r?.method, 'PUT');
    assert.equal(r?.headers['content-type'], 'application/json');
    assert.equal(r?.headers['x-device'], who.id);
    assert.equal(r?.headers.authorization, `Basic ${Buffer.from('hook:s3cret').toString('base64')}`);
    assert.equal(new URL(r?.url ?? '', receiver.url).searchParams.get('t'), '21.5');
    const body = new Webhook(secret).verify(r?.body ?? '', r?.headers as Record<string, string>) as Record<string, unknown>;
    assert.deepEqual(body, { device: who.id, raw: '<b>&', escaped: '&lt;b&gt;&amp;', temp: '21.5', nested: { product: String(productId) }, id: r?.headers['webhook-id'] });
  });

  test('form and body templates; defaults merged into a form unless noDefaults', async () => {
    await webhook({ event: 'frm', url: `${receiver.url}/frm`, form: { reading: '{{PARTICLE_EVENT_VALUE}}' } });
    await webhook({ event: 'bdy', url: `${receiver.url}/bdy`, body: 'value={{{PARTICLE_EVENT_VALUE}}};', headers: { 'Content-Type': 'text/plain' } });
    const { d } = await device();
    await d.publish('frm', '7');
    await d.publish('bdy', 'a&b');
    const [f] = await eventually(() => (at('/frm').length === 1 ? at('/frm') : undefined));
    const form = Object.fromEntries(new URLSearchParams(f?.body));
    assert.equal(form.reading, '7');
    assert.equal(form.event, 'frm');
    const [b] = await eventually(() => (at('/bdy').length === 1 ? at('/bdy') : undefined));
    assert.equal(b?.body, 'value=a&b;');
    assert.equal(b?.headers['content-type'], 'text/plain');
  });
});

describe('what comes back', () => {
  test('hook-sent, then the answer in 512-byte parts through responseTemplate; failures as hook-error; none triggers a webhook', async () => {
    const stream = await openEventStream(`${server.url}/v1/products/${productId}/events`, owner);
    try {
      await webhook({ event: 'ask', url: `${receiver.url}/ask`, responseTemplate: '{{greeting}} {{{PARTICLE_EVENT_VALUE}}}' });
      // A webhook on everything "hook" would see its own answers if they triggered webhooks.
      await webhook({ event: 'hook', url: `${receiver.url}/loop` });
      receiver.answer((r) => (r.url === '/ask' ? { status: 200, body: JSON.stringify({ greeting: 'x'.repeat(600) }) } : r.url === '/fail' ? { status: 500, body: 'broken' } : { status: 200, body: 'ok' }));
      const { d, who } = await device();
      await d.publish('ask', 'please');
      const parts = await eventually(() => {
        const p = stream.events.filter((e) => e.name.startsWith(`${who.id}/hook-response/ask/`));
        return p.length === 2 ? p : undefined;
      });
      assert.equal(parts.map((p) => p.data).sort((a, b) => (b?.length ?? 0) - (a?.length ?? 0)).join(''), `${'x'.repeat(600)} please`);
      assert.ok(parts.every((p) => p.coreid === 'particle-internal'));
      assert.ok(stream.events.some((e) => e.name === 'hook-sent/ask'));
      await webhook({ event: 'doomed', url: `${receiver.url}/fail` });
      await d.publish('doomed', '1');
      const error = await eventually(() => stream.events.find((e) => e.name === 'hook-error/doomed/0'));
      assert.equal(error.data, 'broken');
      assert.equal(at('/loop').length, 0, 'hook-sent, hook-response and hook-error trigger nothing');
    } finally {
      stream.close();
      receiver.answer({ status: 200, body: 'ok' });
    }
  });
});

describe('a receiver that fails', () => {
  const deliveries = async (w: WebhookRecord) => hooks().manage.log(w, { limit: 10 });

  test('500s are retried on the schedule until a 2xx; every attempt is in the log', async () => {
    const { webhook: w } = await webhook({ event: 'retry', url: `${receiver.url}/retry` });
    let n = 0;
    receiver.answer((r) => (r.url === '/retry' && ++n <= 2 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
    const { d } = await device();
    await d.publish('retry', '1');
    await eventually(() => (at('/retry').length === 1 ? true : undefined), 15_000);
    const first = await eventually(async () => ((await deliveries(w))[0]?.attempts === 1 ? (await deliveries(w))[0] : undefined), 15_000);
    assert.equal(first.status, 'pending');
    // The first retry comes within 30 s (10 s, drawn between 8 and 12), the next within 1 min 12 s.
    const wait = first.nextAt.getTime() - clock.nowMs();
    assert.ok(wait >= 8000 && wait <= 12_000, `first retry after ${wait} ms`);
    clock.advance(12_000);
    await eventually(() => (at('/retry').length === 2 ? true : undefined), 15_000);
    // The second attempt is recorded (its next time set from the clock at its answer) before time moves on.
    const second = await eventually(async () => ((await deliveries(w))[0]?.attempts === 2 ? (await deliveries(w))[0] : undefined), 15_000);
    const wait2 = second.nextAt.getTime() - clock.nowMs();
    assert.ok(wait2 >= 48_000 && wait2 <= 72_000, `second retry after ${wait2} ms`);
    clock.advance(72_000);
    await eventually(() => (at('/retry').length === 3 ? true : undefined), 15_000);
    const done = await eventually(async () => ((await deliveries(w))[0]?.status === 'delivered' ? (await deliveries(w))[0] : undefined), 15_000);
    assert.deepEqual(done.log.map((a) => [a.n, a.outcome, a.status]), [[1, 'failed', 503], [2, 'failed', 503], [3, 'delivered', 200]]);
    assert.equal(done.log[0]?.answer, 'busy');
    // The same id on every attempt: a receiver drops repeats by it.
    assert.equal(new Set(at('/retry').map((r) => r.headers['webhook-id'])).size, 1);
    assert.deepEqual(await hooks().manage.counts(w), { delivered: 1, failed: 2, skipped: 0, pending: 0 });
    receiver.answer({ status: 200, body: 'ok' });
  });

  test('a receiver back after failures gets what failed meanwhile at once, not at the step of the schedule', async () => {
    const { webhook: w } = await webhook({ event: 'back', url: `${receiver.url}/back` });
    let up = false;
    receiver.answer((r) => (r.url === '/back' && !up ? { status: 503 } : { status: 200 }));
    const { d } = await device();
    await d.publish('back', '1');
    await d.publish('back', '2');
    await eventually(async () => ((await deliveries(w)).filter((x) => x.attempts === 1 && x.status === 'pending').length === 2 ? true : undefined), 15_000);
    up = true;
    // A new event delivered: the webhook fails no more, and the two that wait for their retry
    // (10 s away on a clock that does not move here) go now.
    await d.publish('back', '3');
    const done = await eventually(async () => {
      const all = await deliveries(w);
      return all.length === 3 && all.every((x) => x.status === 'delivered') ? all : undefined;
    }, 15_000);
    assert.deepEqual(done.map((x) => x.attempts).sort(), [1, 2, 2]);
    receiver.answer({ status: 200, body: 'ok' });
  });

  test('a batch of attempts in which one delivery was deleted meanwhile records the others', async () => {
    const repo = createWebhooksRepository(server.skyport.db);
    const { webhook: kept } = await webhook({ event: 'kept', url: `${receiver.url}/kept` });
    const { webhook: gone } = await webhook({ event: 'gone', url: `${receiver.url}/gone` });
    const now = clock.now();
    const event = { name: 'x', data: null, coreid: 'api', published_at: now.toISOString(), productId, owner: null };
    await repo.insertDeliveries([{ id: 'msg_kept_batch', webhookId: kept.id, event, createdAt: now, lease: null }, { id: 'msg_gone_batch', webhookId: gone.id, event, createdAt: now, lease: null }]);
    await hooks().manage.remove(gone, actor);
    const attempt = (id: string, webhookId: string) => ({
      attempt: { deliveryId: id, webhookId, n: 1, at: now, outcome: 'delivered' as const, status: 200, latencyMs: 1, answer: null, error: null },
      delivery: { status: 'delivered' as const, attempts: 1, skipped: 0, nextAt: now, finishedAt: now },
    });
    await repo.recordAttempts([attempt('msg_gone_batch', gone.id), attempt('msg_kept_batch', kept.id)]);
    const [row] = await repo.deliveries(kept.id, { limit: 5 });
    assert.equal(row?.status, 'delivered');
    assert.deepEqual(row?.log.map((a) => a.outcome), ['delivered']);
    await hooks().manage.remove(kept, actor);
  });

  test('429 with Retry-After is honoured; a time-out is a failed attempt', async () => {
    const { webhook: w } = await webhook({ event: 'slow', url: `${receiver.url}/slow` });
    receiver.answer((r) => (r.url === '/slow' ? { status: 429, headers: { 'retry-after': '120' } } : { status: 200 }));
    const { d } = await device();
    await d.publish('slow', '1');
    const first = await eventually(async () => ((await deliveries(w))[0]?.attempts === 1 ? (await deliveries(w))[0] : undefined));
    assert.ok(first.nextAt.getTime() - clock.nowMs() >= 120_000, 'not before the receiver asked');
    receiver.answer((r) => (r.url === '/slow' ? 'hang' : { status: 200 }));
    clock.advance(121_000);
    const second = await eventually(async () => ((await deliveries(w))[0]?.attempts === 2 ? (await deliveries(w))[0] : undefined), 8000);
    assert.match(second.log[1]?.error ?? '', /no answer within 1 s/);
    receiver.answer({ status: 200, body: 'ok' });
  });

  test('410 Gone disables the webhook at once, says why in an event and the audit log', async () => {
    const stream = await openEventStream(`${server.url}/v1/products/${productId}/events`, owner);
    try {
      const { webhook: w } = await webhook({ event: 'gone', url: `${receiver.url}/gone` });
      receiver.answer((r) => (r.url === '/gone' ? { status: 410 } : { status: 200 }));
      const { d } = await device();
      await d.publish('gone', '1');
      const said = await eventually(() => stream.events.find((e) => e.name === 'hook-disabled/gone'));
      assert.match(String(said.data), /410 Gone/);
      const stored = await hooks().manage.find(w.id);
      assert.match(stored?.disabledReason ?? '', /410/);
      assert.equal((await deliveries(w))[0]?.status, 'failed');
      const audit = await server.skyport.db.query<{ details: Record<string, unknown> | string }>("SELECT details FROM audit_events WHERE type = 'webhook.disabled'");
      assert.ok(audit.some((a) => JSON.stringify(a.details).includes(w.id)));
      // Disabled: the next event's delivery waits, unsent, until the webhook is enabled again.
      receiver.answer({ status: 200, body: 'ok' });
      await d.publish('gone', '2');
      assert.equal(hooks().index.match({ name: 'gone', data: null, ttl: 60, published_at: '', coreid: d.id, private: true, owner: null, productId }).length, 0);
      await hooks().manage.update(stored as WebhookRecord, { disabled: false }, actor);
      await d.publish('gone', '3');
      await eventually(() => (at('/gone').length === 2 ? true : undefined));
    } finally {
      stream.close();
    }
  });

  test('a webhook whose every delivery failed for 5 days is disabled, saying why; one success in between starts the count again', async () => {
    const { webhook: w } = await webhook({ event: 'dying', url: `${receiver.url}/dying` });
    receiver.answer((r) => (r.url === '/dying' ? { status: 500 } : { status: 200 }));
    const { d } = await device();
    const failed = async (n: number) => eventually(async () => ((await hooks().manage.counts(w)).failed >= n ? true : undefined));
    await d.publish('dying', '1');
    await failed(1);
    // Marked failing once the attempt is recorded, in a write of its own just after.
    await eventually(async () => (await hooks().manage.find(w.id))?.failingSince ?? undefined);
    clock.advance(4 * 86400_000);
    await d.publish('dying', '2');
    await failed(2);
    assert.equal((await hooks().manage.find(w.id))?.disabledReason, null, 'four days: still on');
    clock.advance(86400_000 + 1000);
    await d.publish('dying', '3');
    const off = await eventually(async () => (await hooks().manage.find(w.id))?.disabledReason ?? undefined);
    assert.match(off, /failed for 5 days/);
    receiver.answer({ status: 200, body: 'ok' });
  });

  test('an address that is not allowed is refused at save time, and again at connection time', async () => {
    await assert.rejects(webhook({ event: 'x', url: 'http://127.0.0.2:9/' }), /127\.0\.0\.2 is a loopback, private, link-local or metadata address/);
    await assert.rejects(webhook({ event: 'x', url: 'http://169.254.169.254/latest/meta-data' }), /metadata/);
    await assert.rejects(webhook({ event: 'x', url: 'http://10.1.2.3/' }), /private/);
    await assert.rejects(webhook({ event: 'x', url: 'http://[::1]:9/' }), /::1 is a loopback/);
    // `localhost` resolves to 127.0.0.1 (allowed here) and, on most machines, ::1 (not allowed).
    // Saved behind the check's back (as if DNS had answered otherwise then), it is refused when connecting.
    const { webhook: w } = await webhook({ event: 'sneaky', url: `${receiver.url}/sneaky` });
    await server.skyport.db.query("UPDATE webhooks SET spec = jsonb_set(spec, '{url}', to_jsonb($2::text)) WHERE id = $1", [w.id, 'http://127.0.0.3:9/sneaky']);
    hooks().index.replace(await createWebhooksRepository(server.skyport.db).all());
    const { d } = await device();
    await d.publish('sneaky', '1');
    const log = await eventually(async () => ((await deliveries(w))[0]?.attempts === 1 ? (await deliveries(w))[0] : undefined));
    assert.match(log.log[0]?.error ?? '', /127\.0\.0\.3 is a loopback/);
    assert.equal(at('/sneaky').length, 0);
  });
});

describe('secrets, resends and replays', () => {
  test('a rotated secret: both sign for 24 hours, so a receiver with either verifies; then the new one alone', async () => {
    // Receivers check the signature's time against their own clock: the cloud's is put back to it.
    clock.set(new Date());
    const { webhook: w, secret: old } = await webhook({ event: 'rot', url: `${receiver.url}/rot`, json: { v: '{{PARTICLE_EVENT_VALUE}}' } });
    const { secret: fresh } = await hooks().manage.rotateSecret(w, actor);
    assert.notEqual(fresh, old);
    const { d } = await device();
    await d.publish('rot', '1');
    const [r] = await eventually(() => (at('/rot').length === 1 ? at('/rot') : undefined));
    const headers = r?.headers as Record<string, string>;
    assert.equal(headers['webhook-signature']?.split(' ').length, 2);
    for (const s of [old, fresh]) assert.deepEqual(new Webhook(s).verify(r?.body ?? '', headers), { v: '1', event: 'rot', data: '1', coreid: d.id, published_at: (JSON.parse(r?.body ?? '{}') as { published_at: string }).published_at, userid: '', fw_version: '', productID: String(productId) });
    clock.advance(24 * 3600_000 + 1000);
    await d.publish('rot', '2');
    const [, later] = await eventually(() => (at('/rot').length === 2 ? at('/rot') : undefined));
    assert.equal(later?.headers['webhook-signature']?.toString().split(' ').length, 1, 'the old secret signs no more');
  });

  test('resend and replay make new deliveries of the same events; the log keeps the first as it was', async () => {
    const { webhook: w } = await webhook({ event: 'again', url: `${receiver.url}/again` });
    const { d } = await device();
    const from = clock.now();
    for (const n of ['1', '2', '3']) await d.publish('again', n);
    await eventually(() => (at('/again').length === 3 ? true : undefined));
    const log = await eventually(async () => {
      const l = await hooks().manage.log(w, { limit: 10 });
      return l.length === 3 && l.every((x) => x.status === 'delivered') ? l : undefined;
    });
    const first = log.find((x) => x.event.data === '1') as (typeof log)[number];
    await hooks().manage.resend(w, first.id);
    await eventually(() => (at('/again').length === 4 ? true : undefined));
    const resent = at('/again')[3];
    assert.equal(new URLSearchParams(resent?.body).get('data'), '1');
    assert.notEqual(resent?.headers['webhook-id'], first.id, 'a new delivery, with an id of its own');
    clock.advance(1000);
    assert.equal(await hooks().manage.replay(w, from, clock.now()), 3);
    await eventually(() => (at('/again').length === 7 ? true : undefined));
    assert.deepEqual(at('/again').slice(4).map((r) => new URLSearchParams(r.body).get('data')).sort(), ['1', '2', '3']);
    const after = await hooks().manage.log(w, { limit: 20 });
    assert.equal(after.length, 7);
    assert.equal(after.filter((x) => x.resendOf !== null).length, 4);
    await assert.rejects(hooks().manage.resend(w, 'msg_nope'), /No such delivery/);
  });

  test('a user\'s webhook takes the events of the devices they own and what they publish through the API', async () => {
    const rows = await server.skyport.db.query<{ id: string }>('SELECT id FROM users ORDER BY created_at DESC LIMIT 1');
    const userId = rows[0]?.id as string;
    await hooks().manage.create({ kind: 'user', owner: { kind: 'user', id: userId } }, { event: 'mine', url: `${receiver.url}/mine` }, { account: { kind: 'user', id: userId }, ip: null });
    const ok = await raw(`${server.url}/v1/devices/events`, { method: 'POST', token: owner, json: { name: 'mine', data: 'api' } });
    assert.equal(ok.status, 200, ok.text);
    const [r] = await eventually(() => (at('/mine').length === 1 ? at('/mine') : undefined));
    assert.equal(new URLSearchParams(r?.body).get('coreid'), 'api');
    // A fleet device nobody owns is not the user's: the product's webhook takes its event, this one does not.
    await webhook({ event: 'mine', url: `${receiver.url}/fleet-mine` });
    const { d } = await device();
    await d.publish('mine', 'fleet');
    await eventually(() => (at('/fleet-mine').length === 1 ? true : undefined));
    assert.equal(at('/mine').length, 1);
  });
});
