import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from './helpers/server.js';
import { basic, raw, type RawResponse } from './helpers/http.js';
import { newProduct, rejection, signUp } from './helpers/fixtures.js';
import { eventually } from './helpers/eventually.js';
import { provision } from './helpers/device.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { userScope } from '../src/repositories/webhooks.repository.js';

/**
 * The webhook routes (docs/api.md, "Webhooks"): every field taken and shown again, what is
 * refused and why, whose webhooks a token reaches, the delivery log, test events, resends,
 * replays and secret rotation, and particle-api-js and particle-cli 3.49's requests unchanged.
 * Deliveries go to a receiver on a loopback port, which the server allows (WEBHOOK_ALLOW_PRIVATE).
 */
let server: TestServer;
let receiver: Receiver;
let hooks: string;
before(async () => {
  receiver = await startReceiver();
  // 200 "thanks", or 500 "broken" under /fail.
  receiver.answer((r) => (r.url.startsWith('/fail') ? { status: 500, body: 'broken' } : { status: 200, body: 'thanks' }));
  hooks = receiver.url;
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
});
after(async () => {
  await server.close();
  await receiver.close();
});

const at = (path: string) => receiver.received.filter((g) => g.url.split('?')[0] === path);
/** The store's attempts of these webhooks, whichever way they could be reached. */
const attempts = async (ids: string[]) => Number((await server.skyport.db.query<{ n: number | string }>('SELECT count(*) AS n FROM webhook_attempts WHERE webhook_id = ANY($1::text[])', [ids]))[0]?.n);
const call = (method: string, path: string, token: string, json?: unknown): Promise<RawResponse> =>
  raw(`${server.url}${path}`, { method, token, ...(json === undefined ? {} : { json }) });
async function ok(r: Promise<RawResponse>, status = 200): Promise<RawResponse> {
  const res = await r;
  assert.equal(res.status, status, res.text);
  return res;
}
const DEVICE = '0123456789abcdef01234567';

describe('fields', () => {
  test('create answers Particle\'s fields and the signing secret once; GET, the lists and /integrations show every field, never the password or the secret', async () => {
    const { token } = await signUp(server.url);
    const body = {
      event: 'temp/', url: `${hooks}/all?dev={{PARTICLE_DEVICE_ID}}`, requestType: 'put', name: 'Every field', deviceID: DEVICE,
      json: { value: '{{{PARTICLE_EVENT_VALUE}}}', n: 1, nested: ['{{PARTICLE_EVENT_NAME}}'] },
      query: { a: '1', b: '{{PARTICLE_EVENT_NAME}}' }, headers: { 'X-Api-Key': 'key-1' }, auth: { username: 'user', password: 'hunter2-not-shown' },
      noDefaults: true, rejectUnauthorized: false, responseTemplate: '{{status}}', responseTopic: 'resp/{{PARTICLE_DEVICE_ID}}', errorResponseTopic: 'err/{{PARTICLE_DEVICE_ID}}',
      disabled: true,
    };
    const made = (await ok(call('POST', '/v1/webhooks', token, body), 201)).json;
    const echoed = {
      integration_type: 'Webhook', event: 'temp/', url: body.url, requestType: 'PUT', name: 'Every field', deviceID: DEVICE, json: body.json, query: body.query,
      headers: body.headers, auth: { username: 'user' }, noDefaults: true, rejectUnauthorized: false, responseTemplate: '{{status}}',
      responseTopic: body.responseTopic, errorResponseTopic: body.errorResponseTopic, disabled: true, disabled_reason: null, failing_since: null,
    };
    assert.equal(made.ok, true);
    assert.match(made.id, /^[0-9a-f]{24}$/);
    assert.equal(made.hookUrl, `${server.url}/v1/webhooks/${made.id}`);
    assert.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(made.created_at, made.updated_at);
    assert.ok(Math.abs(Date.parse(made.created_at) - Date.now()) < 60_000);
    assert.deepEqual({ ...made, ok: undefined, id: undefined, hookUrl: undefined, secret: undefined, created_at: undefined, updated_at: undefined }, { ...echoed, ok: undefined, id: undefined, hookUrl: undefined, secret: undefined, created_at: undefined, updated_at: undefined });
    assert.doesNotMatch(JSON.stringify(made), /hunter2/);

    const one = await ok(call('GET', `/v1/webhooks/${made.id}`, token));
    const view = { ...echoed, id: made.id, created_at: made.created_at, updated_at: made.updated_at };
    assert.deepEqual(one.json, { ...view, counts: { delivered: 0, failed: 0, skipped: 0, pending: 0 } });
    const [list, integrations, integration] = await Promise.all([
      ok(call('GET', '/v1/webhooks', token)), ok(call('GET', '/v1/integrations', token)), ok(call('GET', `/v1/integrations/${made.id}`, token)),
    ]);
    assert.deepEqual(list.json, [view], 'a bare array, as Particle answers');
    assert.deepEqual(integrations.json, [view], 'a webhook is an integration of type Webhook');
    assert.deepEqual(integration.json, one.json);
    for (const r of [one, list, integrations]) {
      assert.doesNotMatch(r.text, /hunter2|whsec_/, 'neither the auth password nor the signing secret');
    }
  });

  test('form encoding, a form template, a body template and Particle\'s other spellings (eventName, deviceid, "true"/"false")', async () => {
    const { token } = await signUp(server.url);
    const [form, formTemplate, bodyTemplate, spelled] = await Promise.all([
      raw(`${server.url}/v1/webhooks`, { method: 'POST', token, form: { event: 'f', url: `${hooks}/f`, requestType: 'GET', noDefaults: 'true', rejectUnauthorized: 'false' } }),
      call('POST', '/v1/webhooks', token, { event: 'ft', url: `${hooks}/ft`, form: { v: '{{PARTICLE_EVENT_VALUE}}', n: 2, b: true } }),
      call('POST', '/v1/webhooks', token, { event: 'bt', url: `${hooks}/bt`, body: 'value={{PARTICLE_EVENT_VALUE}}', headers: { 'Content-Type': 'text/plain' } }),
      call('POST', '/v1/webhooks', token, { eventName: 'sp', url: `${hooks}/sp`, deviceid: DEVICE.toUpperCase(), request_type: 'delete', name: '' }),
    ]);
    assert.equal(form.status, 201, form.text);
    assert.deepEqual([form.json.requestType, form.json.noDefaults, form.json.rejectUnauthorized], ['GET', true, false]);
    assert.equal(formTemplate.status, 201, formTemplate.text);
    assert.deepEqual(formTemplate.json.form, { v: '{{PARTICLE_EVENT_VALUE}}', n: '2', b: 'true' });
    assert.equal(formTemplate.json.json, undefined);
    assert.equal(bodyTemplate.status, 201, bodyTemplate.text);
    assert.equal(bodyTemplate.json.body, 'value={{PARTICLE_EVENT_VALUE}}');
    assert.deepEqual(bodyTemplate.json.headers, { 'Content-Type': 'text/plain' });
    assert.equal(spelled.status, 201, spelled.text);
    assert.deepEqual([spelled.json.event, spelled.json.deviceID, spelled.json.requestType, spelled.json.name], ['sp', DEVICE, 'DELETE', null]);
  });

  test('a user\'s webhook may name its device, as particle-api-js documents: the name becomes the id of the caller\'s device', async () => {
    const { api, token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const { id } = await provision(server.url, token, product.id);
    await ok(call('POST', '/v1/devices', token, { id }));
    await ok(call('PUT', `/v1/devices/${id}`, token, { name: 'porch-lamp' }));
    const made = (await api.createWebhook({ event: 'named', url: `${hooks}/named`, device: 'porch-lamp', auth: token })).body;
    assert.equal((await ok(call('GET', `/v1/webhooks/${made.id}`, token))).json.deviceID, id);
    const other = await signUp(server.url);
    const theirs = await call('POST', '/v1/webhooks', other.token, { event: 'named', url: `${hooks}/named`, deviceID: 'porch-lamp' });
    assert.equal(theirs.status, 400);
    assert.match(theirs.json.error_description, /you have no device named "porch-lamp"/);
    const edited = await call('PUT', `/v1/webhooks/${made.id}`, token, { deviceid: 'no-such-lamp' });
    assert.equal(edited.status, 400);
  });

  test('PUT changes the fields given and keeps the others, the auth password too; a new body template replaces one of another kind; disabled turns it off and on', async () => {
    const { token } = await signUp(server.url);
    const made = (await ok(call('POST', '/v1/integrations', token, { integration_type: 'Webhook', event: 'edit', url: `${hooks}/edit`, json: { v: '{{{PARTICLE_EVENT_VALUE}}}' }, auth: { username: 'u', password: 'p4ss' }, name: 'Before' }), 201)).json;
    const put = (body: unknown) => call('PUT', `/v1/integrations/${made.id}`, token, body);
    // As particle-api-js editIntegration sends it: the event and the settings, deviceid spelled so.
    const edited = await ok(put({ event: 'edit2', deviceid: DEVICE, integration_type: 'Webhook', form: { v: '{{PARTICLE_EVENT_VALUE}}' }, auth: { username: 'u' } }));
    assert.equal(edited.json.ok, true);
    assert.deepEqual([edited.json.event, edited.json.deviceID, edited.json.name, edited.json.url], ['edit2', DEVICE, 'Before', `${hooks}/edit`]);
    assert.deepEqual(edited.json.form, { v: '{{PARTICLE_EVENT_VALUE}}' });
    assert.equal(edited.json.json, undefined, 'the form replaced the JSON template');
    assert.ok(Date.parse(edited.json.updated_at) >= Date.parse(made.updated_at));
    assert.equal((await ok(put({ deviceID: null }))).json.deviceID, undefined, 'null clears a field');

    const off = await ok(put({ disabled: true }));
    assert.equal(off.json.disabled, true);
    const refused = await call('POST', `/v1/integrations/${made.id}/test`, token, {});
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.json.error_description, /disabled.*PUT disabled:false/);
    assert.equal((await ok(put({ disabled: 'false' }))).json.disabled, false);

    // The password kept through the edits is the one the receiver gets.
    const sent = await ok(call('POST', `/v1/webhooks/${made.id}/test`, token, { data: 'x' }));
    const [request] = await eventually(() => (at('/edit').length > 0 ? at('/edit') : undefined));
    assert.equal(request?.headers.authorization, basic('u', 'p4ss'));
    assert.equal(request?.headers['webhook-id'], sent.json.delivery_id);
  });
});

describe('refusals', () => {
  test('every bad field answers 400 with what is wrong and creates nothing', async () => {
    const { token } = await signUp(server.url);
    const url = `${hooks}/never`;
    const cases: Array<[unknown, RegExp]> = [
      [{ url }, /event is required/],
      [{ event: 'x'.repeat(65), url }, /event/],
      [{ event: 'a+b', url }, /event/],
      [{ event: 'e' }, /url is required/],
      [{ event: 'e', url: 'ftp://example.com/' }, /url must start with http:\/\/ or https:\/\//],
      [{ event: 'e', url: 'http://user:pw@127.0.0.1/' }, /credentials in auth/],
      [{ event: 'e', url: 'http://{{host}}/x' }, /host may not be a template/],
      [{ event: 'e', url: `${url}?q={{#open}}` }, /url is not a valid template/],
      [{ event: 'e', url, requestType: 'PATCH' }, /requestType must be one of GET, POST, PUT, DELETE/],
      [{ event: 'e', url, json: { a: 1 }, form: { b: '2' } }, /one of json, form and body/],
      [{ event: 'e', url, json: 5 }, /json must be an object/],
      [{ event: 'e', url, deviceID: 'not-a-device' }, /deviceID: you have no device named "not-a-device"/],
      [{ event: 'e', url, deviceID: 12 }, /deviceID/],
      [{ event: 'e', url, headers: { Host: 'evil' } }, /Host is written by the cloud/],
      [{ event: 'e', url, headers: { 'Bad Name': 'x' } }, /not a valid header name/],
      [{ event: 'e', url, headers: { 'X-A': { nested: true } } }, /headers/],
      [{ event: 'e', url, auth: { password: 'p' } }, /auth.username is required/],
      [{ event: 'e', url, auth: 'user:pass' }, /auth/],
      [{ event: 'e', url, noDefaults: 'maybe' }, /noDefaults/],
      [{ event: 'e', url, rejectUnauthorized: 2 }, /rejectUnauthorized/],
      [{ event: 'e', url, responseTopic: '{{#x}}' }, /responseTopic is not a valid template/],
      [{ event: 'e', url: `${url}/${'x'.repeat(2100)}` }, /url/],
      [{ event: 'e', url, name: 'n'.repeat(101) }, /name/],
      [{ event: 'e', url, integration_type: 'GoogleMaps' }, /integration_type "GoogleMaps" is not supported/],
      [[{ event: 'e', url }], /body/],
    ];
    const answers = await Promise.all(cases.map(([body]) => call('POST', '/v1/webhooks', token, body)));
    answers.forEach((r, i) => {
      const [body, pattern] = cases[i] as [unknown, RegExp];
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.equal(r.json.ok, false);
      assert.equal(r.json.error, 'invalid_request');
      assert.match(r.json.error_description, pattern, JSON.stringify(body).slice(0, 80));
    });
    const notJson = await raw(`${server.url}/v1/webhooks`, { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: '{"event":' });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json.error, 'invalid_request');
    const empty = await raw(`${server.url}/v1/webhooks`, { method: 'POST', token });
    assert.equal(empty.status, 400);
    assert.match(empty.json.error_description, /event is required/);
    assert.deepEqual((await ok(call('GET', '/v1/webhooks', token))).json, [], 'nothing was created');
  });

  test('/integrations needs integration_type Webhook; a product\'s webhook takes no device; the other routes check what they take', async () => {
    const { token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const url = `${hooks}/never`;
    const [none, other, device] = await Promise.all([
      call('POST', '/v1/integrations', token, { event: 'e', url }),
      call('POST', `/v1/products/${product.id}/integrations`, token, { integration_type: 'AzureIotHub', event: 'e', url }),
      call('POST', `/v1/products/${product.slug}/webhooks`, token, { event: 'e', url, deviceID: DEVICE }),
    ]);
    assert.equal(none.status, 400);
    assert.match(none.json.error_description, /integration_type is required: "Webhook"/);
    assert.match(other.json.error_description, /integration_type "AzureIotHub" is not supported/);
    assert.equal(device.status, 400);
    assert.match(device.json.error_description, /whole fleet; it takes no device/);

    const w = (await ok(call('POST', '/v1/webhooks', token, { event: 'e', url, disabled: true }), 201)).json;
    const base = `/v1/webhooks/${w.id}`;
    const checks: Array<[Promise<RawResponse>, number, RegExp]> = [
      [call('PUT', base, token, { requestType: 'TRACE' }), 400, /requestType/],
      [call('PUT', base, token, { integration_type: 'GoogleMaps' }), 400, /integration_type/],
      [call('PUT', base, token, { url: 'http://10.1.2.3/' }), 400, /WEBHOOK_ALLOW_PRIVATE/],
      [call('GET', `${base}/deliveries?limit=0`, token), 400, /limit/],
      [call('GET', `${base}/deliveries?limit=101`, token), 400, /limit/],
      [call('GET', `${base}/deliveries?status=lost`, token), 400, /status/],
      [call('GET', `${base}/deliveries?before=msg_unknown`, token), 400, /before must be next_before/],
      [call('GET', `${base}/deliveries?before=2026-13-45T99:00:00Z`, token), 400, /before must be an ISO 8601 time/],
      [call('POST', `${base}/replay`, token, { from: 'yesterday', to: new Date().toISOString() }), 400, /from must be an ISO 8601 time/],
      [call('POST', `${base}/replay`, token, { from: new Date().toISOString() }), 400, /body.to is required/],
      [call('POST', `${base}/replay`, token, { from: new Date().toISOString(), to: new Date(Date.now() - 1000).toISOString() }), 400, /from must be before to/],
      [call('POST', `${base}/replay`, token, { from: '2001-01-01T00:00:00Z', to: '2001-01-02T00:00:00Z' }), 400, /30 days/],
      [call('POST', `${base}/test`, token, { data: 'é'.repeat(600) }), 400, /at most 1024 bytes/],
      [call('POST', `${base}/test`, token, { data: 5 }), 400, /data/],
      [call('POST', `${base}/deliveries/msg_unknown/resend`, token, {}), 404, /No such delivery/],
      [call('GET', '/v1/webhooks/0123456789abcdef01234567', token), 404, /No such webhook/],
      [call('DELETE', '/v1/integrations/nope', token), 404, /No such webhook/],
    ];
    for (const [r, status, pattern] of checks) {
      const res = await r;
      assert.equal(res.status, status, res.text);
      assert.equal(res.json.ok, false);
      assert.match(res.json.error_description, pattern);
    }
  });

  test('an address on this machine or a private network is refused when saved, unless WEBHOOK_ALLOW_PRIVATE lists it; a name that does not resolve too', async () => {
    const strict = await startTestServer();
    try {
      const { token } = await signUp(strict.url);
      const urls = ['http://127.0.0.1:8080/', 'http://localhost/', 'http://10.0.0.5/', 'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/'];
      const answers = await Promise.all(urls.map((url) => raw(`${strict.url}/v1/webhooks`, { method: 'POST', token, json: { event: 'e', url } })));
      answers.forEach((r, i) => {
        assert.equal(r.status, 400, `${urls[i]}: ${r.text}`);
        assert.match(r.json.error_description, /loopback, private, link-local or metadata address.*WEBHOOK_ALLOW_PRIVATE/, urls[i]);
      });
      const nowhere = await raw(`${strict.url}/v1/webhooks`, { method: 'POST', token, json: { event: 'e', url: 'http://nowhere.invalid/' } });
      assert.equal(nowhere.status, 400);
      assert.match(nowhere.json.error_description, /nowhere\.invalid does not resolve/);
      assert.deepEqual((await raw(`${strict.url}/v1/webhooks`, { token })).json, []);
    } finally {
      await strict.close();
    }
    // This server allows 127.0.0.1, that address alone.
    const { token } = await signUp(server.url);
    await ok(call('POST', '/v1/webhooks', token, { event: 'e', url: 'http://127.0.0.1:8080/' }), 201);
    const next = await call('POST', '/v1/webhooks', token, { event: 'e', url: 'http://127.0.0.2/' });
    assert.equal(next.status, 400);
    assert.match(next.json.error_description, /127\.0\.0\.2 is a loopback/);
  });
});

describe('whose webhooks', () => {
  test('a user\'s webhooks are theirs alone; a product\'s are its team\'s and its tokens\'; each path reaches only its own, and others answer 404', async () => {
    const [alice, bob, carol] = await Promise.all([signUp(server.url), signUp(server.url), signUp(server.url)]);
    const [product, otherProduct] = await Promise.all([newProduct(server.url, alice.token), newProduct(server.url, bob.token)]);
    await ok(call('POST', `/v1/products/${product.id}/team`, alice.token, { username: carol.username }), 201);
    const client = (await ok(call('POST', `/v1/products/${product.id}/clients`, alice.token, { name: 'backend' }), 201)).json.client;
    const productToken = (await ok(raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'client_credentials' } }))).json.access_token as string;
    const app = (await ok(call('POST', `/v1/products/${product.id}/clients`, alice.token, { name: 'app', scope: 'customers:create' }), 201)).json.client;
    const customer = (await ok(raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(app.id, app.secret) }, form: { email: `cust-${Date.now()}@example.com`, password: 'correct horse' } }), 201)).json.access_token as string;

    const mine = (await ok(call('POST', '/v1/webhooks', alice.token, { event: 'mine', url: `${hooks}/mine`, disabled: true }), 201)).json.id as string;
    const fleet = (await ok(call('POST', `/v1/products/${product.slug}/integrations`, productToken, { integration_type: 'Webhook', event: 'fleet', url: `${hooks}/fleet`, disabled: true }), 201)).json;
    assert.equal(fleet.hookUrl, `${server.url}/v1/products/${product.id}/integrations/${fleet.id}`);

    const ids = async (r: Promise<RawResponse>) => ((await ok(r)).json as Array<{ id: string }>).map((w) => w.id);
    assert.deepEqual(await ids(call('GET', '/v1/webhooks', alice.token)), [mine], 'the product\'s webhook is not the user\'s');
    assert.deepEqual(await ids(call('GET', '/v1/webhooks', bob.token)), []);
    assert.deepEqual(await ids(call('GET', '/v1/integrations', carol.token)), [], 'a member\'s own webhooks are not the owner\'s');
    for (const t of [alice.token, carol.token, productToken]) {
      assert.deepEqual(await ids(call('GET', `/v1/products/${product.id}/webhooks`, t)), [fleet.id]);
    }

    // Another owner's webhook, or one of the other scope, answers as an unknown one does.
    const hidden: Array<[string, string, string]> = [
      ['GET', `/v1/webhooks/${mine}`, bob.token], ['GET', `/v1/webhooks/${mine}`, carol.token], ['PUT', `/v1/integrations/${mine}`, bob.token],
      ['DELETE', `/v1/webhooks/${mine}`, bob.token], ['GET', `/v1/webhooks/${mine}/deliveries`, bob.token], ['POST', `/v1/webhooks/${mine}/secret`, bob.token],
      ['POST', `/v1/webhooks/${mine}/test`, bob.token], ['GET', `/v1/webhooks/${fleet.id}`, alice.token], ['GET', `/v1/products/${product.id}/webhooks/${mine}`, alice.token],
      ['DELETE', `/v1/products/${otherProduct.id}/webhooks/${fleet.id}`, bob.token],
    ];
    for (const [method, path, token] of hidden) {
      const r = await call(method, path, token, method === 'GET' || method === 'DELETE' ? undefined : {});
      assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      assert.equal(r.json.error, 'not_found');
    }
    // Tokens of the wrong kind.
    const refused: Array<[string, string, number]> = [
      ['/v1/webhooks', productToken, 403], ['/v1/integrations', customer, 403], [`/v1/products/${product.id}/webhooks`, customer, 403],
      [`/v1/products/${product.id}/webhooks`, bob.token, 403], [`/v1/products/${product.id}/webhooks/${fleet.id}`, bob.token, 403],
    ];
    for (const [path, token, status] of refused) assert.equal((await call('GET', path, token)).status, status, path);

    // The owner's webhook through either path; deleting it through one removes it from both.
    assert.equal((await ok(call('GET', `/v1/integrations/${mine}`, alice.token))).json.id, mine);
    assert.deepEqual((await ok(call('DELETE', `/v1/integrations/${mine}`, alice.token))).json, { ok: true });
    assert.equal((await call('GET', `/v1/webhooks/${mine}`, alice.token)).status, 404);
    assert.deepEqual((await ok(call('DELETE', `/v1/products/${product.slug}/webhooks/${fleet.id}`, carol.token))).json, { ok: true });
    assert.deepEqual(await ids(call('GET', `/v1/products/${product.id}/integrations`, productToken)), []);
  });

  test('what the node matches events against follows each change; a deleted product\'s or account\'s webhooks leave it with them', async () => {
    const { token, password, username } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const index = server.skyport.services.webhooks.index;
    const made = async (event: string) => (await ok(call('POST', `/v1/products/${product.id}/webhooks`, token, { event, url: `${hooks}/p`, disabled: true }), 201)).json.id as string;
    const a = await made('a/');
    const b = await made('b/');
    const user = (await ok(call('POST', '/v1/webhooks', token, { event: 'u/', url: `${hooks}/u`, disabled: true }), 201)).json.id as string;
    assert.deepEqual([a, b, user].map((id) => index.get(id)?.spec.event), ['a/', 'b/', 'u/']);
    await ok(call('PUT', `/v1/products/${product.id}/integrations/${a}`, token, { event: 'a2/' }));
    assert.equal(index.get(a)?.spec.event, 'a2/');
    // Two that have a delivery log: it goes with them.
    const logged = async (path: string) => {
      const id = (await ok(call('POST', path, token, { event: 'log/', url: `${hooks}/logged` }), 201)).json.id as string;
      await ok(call('POST', `${path}/${id}/test`, token, { data: 'x' }));
      await eventually(async () => (await attempts([id])) > 0 || undefined);
      return id;
    };
    const fleetLog = await logged(`/v1/products/${product.id}/webhooks`);
    const userLog = await logged('/v1/webhooks');

    await ok(call('DELETE', `/v1/products/${product.id}`, token), 204);
    assert.deepEqual([a, b].map((id) => index.get(id)), [undefined, undefined]);
    assert.equal(await attempts([fleetLog]), 0, 'the product\'s delivery log is deleted');
    assert.equal(index.get(user)?.spec.event, 'u/', 'the user\'s own webhook stays');

    // A deleted account's webhooks go with it, from the store and from the index.
    const owner = index.get(user)?.scope;
    assert.ok(owner?.kind === 'user');
    const other = await signUp(server.url);
    const kept = (await ok(call('POST', '/v1/webhooks', other.token, { event: 'u/', url: `${hooks}/u`, disabled: true }), 201)).json.id as string;
    await ok(raw(`${server.url}/v1/user`, { method: 'DELETE', token, json: { password } }));
    assert.equal(index.get(user), undefined);
    assert.deepEqual(await server.skyport.services.webhooks.manage.list(userScope(owner.owner.id)), [], `${username}'s webhooks are deleted`);
    assert.equal(await attempts([userLog]), 0, 'the account\'s delivery log is deleted');
    assert.equal(index.get(kept)?.spec.event, 'u/', 'another account\'s webhook stays');
  });
});

describe('deliveries', () => {
  test('a test event reaches the receiver signed with the secret; the log shows each attempt; resend and replay send again; the counts add up', async () => {
    const { token } = await signUp(server.url);
    const made = (await ok(call('POST', '/v1/webhooks', token, { event: 'log', url: `${hooks}/log`, noDefaults: true, json: { value: '{{{PARTICLE_EVENT_VALUE}}}', name: '{{{PARTICLE_EVENT_NAME}}}' } }), 201)).json;
    const base = `/v1/webhooks/${made.id}`;
    const sent = (await ok(call('POST', `${base}/test`, token, { data: 'hello' }))).json;
    assert.equal(sent.ok, true);
    assert.match(sent.delivery_id, /^msg_/);
    const [first] = await eventually(() => (at('/log').length === 1 ? at('/log') : undefined));
    assert.deepEqual(new Webhook(made.secret).verify(first!.body, first!.headers as Record<string, string>), { value: 'hello', name: 'log' });
    assert.equal(first!.headers['webhook-id'], sent.delivery_id);

    const log = await eventually(async () => {
      const r = (await ok(call('GET', `${base}/deliveries`, token))).json;
      return r.deliveries[0]?.status === 'delivered' ? r : undefined;
    });
    const [d] = log.deliveries;
    assert.equal(log.next_before, null);
    assert.deepEqual({ ...d, created_at: 'x', finished_at: 'x', attempts: undefined }, {
      id: sent.delivery_id, status: 'delivered', event: { name: 'log', data: 'hello', coreid: 'api', published_at: d.event.published_at },
      created_at: 'x', next_at: null, finished_at: 'x', resend_of: null, attempts: undefined,
    });
    assert.equal(d.attempts.length, 1);
    assert.deepEqual({ ...d.attempts[0], at: 'x', latency_ms: 0 }, { n: 1, at: 'x', outcome: 'delivered', status: 200, latency_ms: 0, answer: 'thanks', error: null });
    assert.ok(d.attempts[0].latency_ms >= 0);

    const again = (await ok(call('POST', `${base}/deliveries/${sent.delivery_id}/resend`, token))).json;
    assert.notEqual(again.delivery_id, sent.delivery_id);
    await eventually(() => (at('/log').length === 2 ? true : undefined));
    assert.equal(at('/log')[1]?.headers['webhook-id'], again.delivery_id, 'a resend is a new delivery');
    // A replay sends again what the range holds, resends left out.
    const replayed = (await ok(call('POST', `${base}/replay`, token, { from: new Date(Date.now() - 60_000).toISOString(), to: new Date(Date.now() + 1000).toISOString() }))).json;
    assert.deepEqual(replayed, { ok: true, count: 1 });
    await eventually(() => (at('/log').length === 3 ? true : undefined));

    const detail = await eventually(async () => {
      const r = (await ok(call('GET', base, token))).json;
      return r.counts.delivered === 3 ? r : undefined;
    });
    assert.deepEqual(detail.counts, { delivered: 3, failed: 0, skipped: 0, pending: 0 });
    const all = (await ok(call('GET', `${base}/deliveries?status=delivered`, token))).json.deliveries as Array<{ id: string; resend_of: string | null }>;
    assert.equal(all.length, 3);
    assert.deepEqual(all.map((x) => x.resend_of), [sent.delivery_id, sent.delivery_id, null], 'newest first');

    // A failing receiver: the attempt's status and the start of its answer.
    const failing = (await ok(call('POST', '/v1/webhooks', token, { event: 'f', url: `${hooks}/fail` }), 201)).json;
    await ok(call('POST', `/v1/webhooks/${failing.id}/test`, token, {}));
    const failed = await eventually(async () => {
      const r = (await ok(call('GET', `/v1/webhooks/${failing.id}/deliveries`, token))).json;
      // Retried later: pending again, with the attempt in the log.
      return r.deliveries[0]?.status === 'pending' && r.deliveries[0].attempts.length > 0 ? r.deliveries[0] : undefined;
    });
    assert.ok(Date.parse(failed.next_at) > Date.now() - 1000);
    assert.deepEqual([failed.attempts[0].outcome, failed.attempts[0].status, failed.attempts[0].answer], ['failed', 500, 'broken']);
    assert.equal((await call('POST', `/v1/webhooks/${failing.id}/deliveries/${sent.delivery_id}/resend`, token)).status, 404, 'another webhook\'s delivery');
    await ok(call('DELETE', `/v1/webhooks/${failing.id}`, token));
  });

  test('the log pages by next_before, also through deliveries a replay wrote at one instant, and by time', async () => {
    const { token } = await signUp(server.url);
    const made = (await ok(call('POST', '/v1/webhooks', token, { event: 'page', url: `${hooks}/page` }), 201)).json;
    const base = `/v1/webhooks/${made.id}`;
    const start = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 3; i++) await ok(call('POST', `${base}/test`, token, { data: String(i) }));
    await ok(call('POST', `${base}/replay`, token, { from: start, to: new Date(Date.now() + 1000).toISOString() }));
    const seen: string[] = [];
    let before: string | null = null;
    for (let page = 0; page < 10; page++) {
      const r: RawResponse = await ok(call('GET', `${base}/deliveries?limit=2${before ? `&before=${before}` : ''}`, token));
      seen.push(...(r.json.deliveries as Array<{ id: string }>).map((x) => x.id));
      before = r.json.next_before as string | null;
      if (before === null) break;
    }
    assert.equal(seen.length, 6, 'three tests and their three replays');
    assert.equal(new Set(seen).size, 6, 'no delivery twice, none left out');
    const byTime = (await ok(call('GET', `${base}/deliveries?before=${encodeURIComponent(start)}`, token))).json;
    assert.deepEqual(byTime, { deliveries: [], next_before: null });
    await ok(call('DELETE', base, token));
  });

  test('a rotated secret is shown once; deliveries are signed with it, and with the old one for a day', async () => {
    const { token } = await signUp(server.url);
    const made = (await ok(call('POST', '/v1/webhooks', token, { event: 'rot', url: `${hooks}/rot`, noDefaults: true, json: { v: '{{{PARTICLE_EVENT_VALUE}}}' } }), 201)).json;
    const rotated = (await ok(call('POST', `/v1/webhooks/${made.id}/secret`, token))).json;
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, made.secret);
    const until = Date.parse(rotated.previous_secret_expires_at) - Date.now();
    assert.ok(until > 23 * 3600_000 && until <= 24 * 3600_000, `the old secret signs for 24 h, not ${until} ms`);
    assert.doesNotMatch((await ok(call('GET', `/v1/webhooks/${made.id}`, token))).text, /whsec_/);
    await ok(call('POST', `/v1/webhooks/${made.id}/test`, token, { data: 'r' }));
    const [r] = await eventually(() => (at('/rot').length === 1 ? at('/rot') : undefined));
    for (const secret of [rotated.secret, made.secret]) {
      assert.deepEqual(new Webhook(secret).verify(r!.body, r!.headers as Record<string, string>), { v: 'r' });
    }
  });
});

describe('particle clients', () => {
  test('particle-api-js: createWebhook, listWebhooks and deleteWebhook, of a user and of a product', async () => {
    const { api, token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    for (const scope of [{}, { product: product.slug }]) {
      const made = (await api.createWebhook({ event: 'js', url: `${hooks}/js`, rejectUnauthorized: false, noDefaults: true, hook: { method: 'PUT', headers: { 'X-One': '1' }, json: { v: '{{{PARTICLE_EVENT_VALUE}}}' }, auth: { username: 'u', password: 'p' }, responseEvent: 'js-answer' }, auth: token, ...scope })).body;
      assert.equal(made.ok, true);
      assert.equal(made.event, 'js');
      assert.equal(made.url, `${hooks}/js`);
      assert.equal(made.name, null);
      assert.match(made.hookUrl, /^http:\/\/.*\/webhooks\/[0-9a-f]{24}$/);
      assert.ok(!Number.isNaN(Date.parse(made.created_at)));
      const listed = (await api.listWebhooks({ auth: token, ...scope })).body as Array<Record<string, unknown>>;
      assert.equal(listed.length, 1);
      assert.deepEqual({ id: listed[0]?.id, event: listed[0]?.event, url: listed[0]?.url, requestType: listed[0]?.requestType, headers: listed[0]?.headers, responseTopic: listed[0]?.responseTopic, noDefaults: listed[0]?.noDefaults, rejectUnauthorized: listed[0]?.rejectUnauthorized },
        { id: made.id, event: 'js', url: `${hooks}/js`, requestType: 'PUT', headers: { 'X-One': '1' }, responseTopic: 'js-answer', noDefaults: true, rejectUnauthorized: false });
      assert.deepEqual((await api.deleteWebhook({ hookId: made.id, auth: token, ...scope })).body, { ok: true });
      assert.deepEqual((await api.listWebhooks({ auth: token, ...scope })).body, []);
      const err = await rejection(api.deleteWebhook({ hookId: made.id, auth: token, ...scope }));
      assert.equal(err.statusCode, 404);
    }
    const bad = await rejection(api.createWebhook({ event: 'js', url: 'http://10.9.8.7/', auth: token }));
    assert.equal(bad.statusCode, 400);
    assert.match(String(bad.body.error_description), /WEBHOOK_ALLOW_PRIVATE/);
  });

  test('particle-api-js: createIntegration, editIntegration, listIntegrations and deleteIntegration, of a user and of a product', async () => {
    const { api, token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    for (const scope of [{}, { product: product.id }]) {
      const made = (await api.createIntegration({ event: 'int', settings: { integration_type: 'Webhook', url: `${hooks}/int`, requestType: 'POST', name: 'Integration' }, auth: token, ...scope })).body;
      assert.equal(made.integration_type, 'Webhook');
      assert.equal(made.name, 'Integration');
      const edited = (await api.editIntegration({ integrationId: made.id, event: 'int2', settings: { integration_type: 'Webhook', url: `${hooks}/int2`, requestType: 'GET' }, auth: token, ...scope })).body;
      assert.deepEqual([edited.id, edited.event, edited.url, edited.requestType, edited.name], [made.id, 'int2', `${hooks}/int2`, 'GET', 'Integration']);
      const listed = (await api.listIntegrations({ auth: token, ...scope })).body as Array<Record<string, unknown>>;
      assert.deepEqual(listed.map((i) => [i.id, i.event, i.integration_type, i.url, i.requestType]), [[made.id, 'int2', 'Webhook', `${hooks}/int2`, 'GET']]);
      assert.deepEqual((await api.deleteIntegration({ integrationId: made.id, auth: token, ...scope })).body, { ok: true });
      assert.deepEqual((await api.listIntegrations({ auth: token, ...scope })).body, []);
    }
    const other = await rejection(api.createIntegration({ event: 'int', settings: { integration_type: 'GoogleMaps', api_key: 'k' }, auth: token }));
    assert.equal(other.statusCode, 400);
  });

  /*
   * particle-cli 3.49 (src/cmd/integration.js and src/cmd/api.js at v3.49.0, unchanged through
   * v3.49.2) declares node >= 22 and cannot be installed here (test/helpers/particle-cli.ts); its
   * `integration create|list|delete` (and `webhook …`, their alias) are replayed as it makes them,
   * through particle-api-js 12 as it does.
   */
  test('particle-cli 3.49: integration create, list and delete, with --product too, as it sends and reads them', async () => {
    const { api, token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    // IntegrationCommand._createHook: the arguments (or a JSON file's fields) become integrationData…
    const integrationData = (eventName: string, url: string, deviceID: string | undefined, requestType: string | undefined, data: Record<string, unknown> = {}) =>
      Object.assign({ event: eventName, url, deviceid: deviceID, requestType: requestType || data.requestType }, data);
    // …ParticleApi.createIntegrationWithObj: integration_type set last, then createIntegration; it
    // fails only on `error` in the answer, and reads the id from `id` or `integration.id`.
    async function create(obj: Record<string, unknown>, productId?: string) {
      const settings = Object.assign({}, obj, { integration_type: 'Webhook' });
      const body = (await api.createIntegration({ event: obj.event, settings, org: undefined, product: productId, auth: token })).body;
      assert.ok(body && !body.error, JSON.stringify(body));
      return (body.id || body.integration?.id) as string;
    }
    // ParticleApi.listIntegrations: an array, {integrations} or {webhooks}; `--type Webhook` and
    // `webhook list` keep integration_type Webhook; listHooks prints id, event, integration_type, url, deviceID, created_at.
    async function list(productId?: string) {
      const body = (await api.listIntegrations({ org: undefined, product: productId, auth: token })).body;
      const integrations = Array.isArray(body) ? body : (body && (body.integrations || body.webhooks)) || [];
      return (integrations as Array<Record<string, unknown>>).filter((i) => i.integration_type === 'Webhook');
    }

    // `particle integration create temp <url> <device>`
    const userHook = await create(integrationData('temp', `${hooks}/cli`, DEVICE, undefined));
    // `particle integration create hook.json --product <slug>`, with the template's comment field.
    const fileHook = await create(integrationData('gps', `${hooks}/cli-file`, undefined, undefined, {
      event: 'gps', url: `${hooks}/cli-file`, requestType: 'PUT', json: { loc: '{{{PARTICLE_EVENT_VALUE}}}' }, _: 'The following parameters are optional', rejectUnauthorized: 'true',
    }), product.slug);
    const [mine] = await list();
    assert.deepEqual([mine?.id, mine?.event, mine?.integration_type, mine?.url, mine?.deviceID, mine?.requestType], [userHook, 'temp', 'Webhook', `${hooks}/cli`, DEVICE, 'POST']);
    assert.ok(!Number.isNaN(Date.parse(String(mine?.created_at))));
    const [productHook] = await list(product.slug);
    assert.deepEqual([productHook?.id, productHook?.event, productHook?.requestType, productHook?.json], [fileHook, 'gps', 'PUT', { loc: '{{{PARTICLE_EVENT_VALUE}}}' }]);

    // `particle integration delete <id>`, and `delete all --product` (after its confirmation): one deleteIntegration each.
    await api.deleteIntegration({ integrationId: userHook, org: undefined, product: undefined, auth: token });
    for (const hook of await list(product.slug)) await api.deleteIntegration({ integrationId: hook.id, org: undefined, product: product.slug, auth: token });
    assert.deepEqual([await list(), await list(product.slug)], [[], []]);
    // What it shows of a refusal: error_description (extractApiErrorMessage).
    const refused = await rejection(api.createIntegration({ event: 'temp', settings: { event: 'temp', url: 'http://10.0.0.1/', integration_type: 'Webhook' }, auth: token }));
    assert.equal(refused.statusCode, 400);
  });
});
