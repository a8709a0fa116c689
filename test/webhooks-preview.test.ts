import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw, type RawResponse } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { eventually } from './helpers/eventually.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * `POST /v1/webhooks/preview` and `POST /v1/products/:p/webhooks/preview` (docs/api.md,
 * "Webhooks"): the request a sample event would make, from the same parsing and templates as a
 * delivery; nothing saved, nothing sent, no password and no signature in it.
 */
let server: TestServer;
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
});
after(async () => {
  await server.close();
  await receiver.close();
});

const call = (method: string, path: string, token: string, json?: unknown): Promise<RawResponse> =>
  raw(`${server.url}${path}`, { method, token, ...(json === undefined ? {} : { json }) });
const DEVICE = 'aaaaaaaaaaaaaaaaaaaaaaaa';

describe('webhook preview', { concurrency: true }, () => {
  test("a user's webhook: templates rendered for the sample event, the auth header masked, a placeholder signature; nothing saved or sent", async () => {
    const { token } = await signUp(server.url);
    const sent = receiver.received.length;
    const r = await call('POST', '/v1/webhooks/preview', token, {
      event: 'temp', url: 'https://example.com/hooks/{{PARTICLE_DEVICE_ID}}', requestType: 'put',
      json: { reading: '{{{temp}}}', where: '{{PARTICLE_EVENT_NAME}}' }, query: { unit: '{{unit}}' },
      headers: { 'X-Api-Key': 'key-{{{PARTICLE_EVENT_NAME}}}' }, auth: { username: 'hooks', password: 'hunter2-never-shown' },
      sample: { name: 'temp/basement', data: '{"temp":21.5,"unit":"C"}', coreid: DEVICE },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.method, 'PUT');
    assert.equal(r.json.url, `https://example.com/hooks/${DEVICE}?unit=C`);
    const h = r.json.headers as Record<string, string>;
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h['user-agent'], 'ParticleBot/1.1');
    assert.equal(h['x-api-key'], 'key-temp/basement');
    assert.equal(h.authorization, 'Basic ••••••••');
    assert.equal(h['webhook-id'], 'msg_preview');
    assert.match(h['webhook-timestamp'] ?? '', /^\d{10}$/);
    assert.match(h['webhook-signature'] ?? '', /^v1,<.*signing secret>$/);
    const body = JSON.parse(r.json.body as string);
    assert.deepEqual({ ...body, published_at: undefined }, {
      event: 'temp/basement', data: '{"temp":21.5,"unit":"C"}', coreid: DEVICE, published_at: undefined, reading: '21.5', where: 'temp&#x2F;basement',
    }, "Particle's default fields merged into the JSON template; {{x}} escapes HTML as Mustache does");
    assert.equal(body.published_at, r.json.event.published_at);
    assert.deepEqual({ ...r.json.event, published_at: undefined }, { name: 'temp/basement', data: '{"temp":21.5,"unit":"C"}', coreid: DEVICE, published_at: undefined });
    assert.doesNotMatch(r.text, /hunter2|aG9va3M6aHVudGVy|whsec_/, 'neither the password (nor its base64) nor a secret');
    assert.deepEqual((await call('GET', '/v1/webhooks', token)).json, [], 'nothing saved');
    assert.equal(receiver.received.length, sent, 'nothing sent');
  });

  test("a product's webhook: Particle's default fields with the product's (a form for POST, the query for GET); the event prefix as the sample's name when none is given", async () => {
    const { token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const base = `/v1/products/${product.slug}/webhooks/preview`;
    const post = await call('POST', base, token, { event: 'status', url: 'https://example.com/in', sample: { data: 'on' } });
    assert.equal(post.status, 200, post.text);
    assert.equal(post.json.method, 'POST');
    assert.equal(post.json.headers['content-type'], 'application/x-www-form-urlencoded');
    const form = Object.fromEntries(new URLSearchParams(post.json.body as string));
    assert.deepEqual({ ...form, published_at: undefined, coreid: undefined }, {
      event: 'status', data: 'on', published_at: undefined, coreid: undefined, userid: 'customer@example.com', fw_version: '1', productID: String(product.id),
    });
    assert.match(form.coreid ?? '', /^[0-9a-f]{24}$/, 'a made-up device');
    assert.equal(post.json.headers.authorization, undefined, 'no auth, no authorization header');

    const get = await call('POST', base, token, { event: 'status', url: 'https://example.com/in', requestType: 'GET', noDefaults: false });
    assert.equal(get.status, 200, get.text);
    assert.equal(get.json.body, '');
    const query = new URL(get.json.url as string).searchParams;
    assert.deepEqual([query.get('event'), query.get('data'), query.get('productID')], ['status', '', String(product.id)]);
    assert.equal(get.json.event.data, null);

    const custom = await call('POST', base, token, { event: 'status', url: 'https://example.com/in', body: 'v={{PARTICLE_EVENT_VALUE}} p={{PRODUCT_ID}}', noDefaults: true, sample: { data: '42' } });
    assert.equal(custom.status, 200, custom.text);
    assert.equal(custom.json.body, `v=42 p=${product.id}`);
    assert.equal(custom.json.headers['content-type'], undefined);
  });

  test('what cannot be previewed is said in words (400), as a save would say it', async () => {
    const { token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['/v1/webhooks/preview', { url: 'https://example.com/' }, /event is required/],
      ['/v1/webhooks/preview', { event: 'x', url: 'ftp://example.com/' }, /url must start with http/],
      ['/v1/webhooks/preview', { event: 'x', url: 'https://example.com/', json: { a: 1 }, body: 'b' }, /give one of json, form and body/],
      ['/v1/webhooks/preview', { event: 'x', url: 'https://example.com/', body: '{{#open}}never closed' }, /the request could not be made: Unclosed section/],
      ['/v1/webhooks/preview', { event: 'x', url: 'https://example.com/', sample: { name: 'a+b' } }, /sample.name must be an event name/],
      ['/v1/webhooks/preview', { event: 'x', url: 'https://example.com/', deviceID: 'porch-lamp' }, /you have no device named "porch-lamp"/],
      ['/v1/webhooks/preview', { event: 'x', url: 'https://example.com/', headers: { 'webhook-signature': 'forged' } }, /written by the cloud/],
      [`/v1/products/${product.id}/webhooks/preview`, { event: 'x', url: 'https://example.com/', deviceID: DEVICE }, /takes no device/],
    ];
    for (const [path, body, said] of cases) {
      const r = await call('POST', path, token, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.error, 'invalid_request');
      assert.match(r.json.error_description, said, JSON.stringify(body));
      assert.equal(r.json.info, r.json.error_description, 'particle-cli prints info');
    }
    const notJson = await raw(`${server.url}/v1/webhooks/preview`, { method: 'POST', token, json: { event: 'x', url: 'https://example.com/', sample: { data: 5 } } });
    assert.equal(notJson.status, 400, notJson.text);
    // Someone else's product: no preview of its webhooks.
    const other = await signUp(server.url);
    assert.equal((await call('POST', `/v1/products/${product.id}/webhooks/preview`, other.token, { event: 'x', url: 'https://example.com/' })).status, 403);
  });

  test('the preview is the request a delivery makes: a test event of the same webhook reaches the receiver with that method, path and body', async () => {
    const { token } = await signUp(server.url);
    const fields = {
      event: 'preview-check', url: `${receiver.url}/same/{{PARTICLE_EVENT_NAME}}`, requestType: 'POST',
      json: { t: '{{{temp}}}', d: '{{PARTICLE_DEVICE_ID}}' }, headers: { 'X-Mark': 'm-{{temp}}' }, noDefaults: true,
    };
    const preview = await call('POST', '/v1/webhooks/preview', token, { ...fields, sample: { data: '{"temp":7}', coreid: 'api' } });
    assert.equal(preview.status, 200, preview.text);
    const made = await call('POST', '/v1/webhooks', token, fields);
    assert.equal(made.status, 201, made.text);
    const tested = await call('POST', `/v1/webhooks/${made.json.id}/test`, token, { data: '{"temp":7}' });
    assert.equal(tested.status, 200, tested.text);
    const got = await eventually(() => receiver.received.find((r) => r.headers['webhook-id'] === tested.json.delivery_id), 10_000, 'the test delivery');
    assert.equal(got.method, preview.json.method);
    assert.equal(`${receiver.url}${got.url}`, preview.json.url);
    // The same JSON (the store may keep a template's keys in another order).
    assert.deepEqual(JSON.parse(got.body), JSON.parse(preview.json.body));
    assert.deepEqual(JSON.parse(got.body), { t: '7', d: 'api' });
    for (const name of ['content-type', 'user-agent', 'x-mark']) assert.equal(got.headers[name], preview.json.headers[name], name);
  });
});
