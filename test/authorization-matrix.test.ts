import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { startTestServer, manualClock, email, type TestServer } from './helpers/server.js';
import mqtt from 'mqtt';
import { basic, raw, type RawResponse } from './helpers/http.js';
import { totpNow } from '../src/domain/totp.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';
import { firmwareBinary } from './helpers/firmware.js';
import { CREDENTIALS, MATRIX, matrixOf, renderMatrix, routeKey, type CredentialId, type Outcome, type RouteRule } from './authorization-matrix.table.js';

/*
 * Walks every route of the API with every kind of credential (test/authorization-matrix.table.ts
 * holds the expected answers and docs/security.md shows them). A cell of a route whose allowed
 * requests change what other cells rely on (deletions, revocations, MFA changes) gets a fixture
 * of its own unless the guard is expected to refuse it (ownFixture); the other cells share one.
 */

const clock = manualClock();
let server: TestServer;
/** Where the fixture's webhooks send: a loopback receiver that answers 200, allowed by WEBHOOK_ALLOW_PRIVATE. */
const receiver = createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')); });
let hookUrl: string;
before(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  server = await startTestServer({ clock, env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
});
after(async () => {
  await server.close();
  receiver.closeAllConnections();
  receiver.close();
});

const PASSWORD = 'correct horse battery';
/** An Ed25519 public key for the signing-key routes. */
const SIGNING_KEY = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString();

interface User { username: string; password: string; token: string }

interface Fixture {
  owner: User;
  otherUser: User;
  member: User;
  /** A third team member, for DELETE team/:username. */
  extraMember: { username: string };
  /** Signed up, not in the team: for POST team. */
  invitee: { username: string };
  product: { id: number; slug: string };
  otherProduct: { id: number; slug: string };
  /** A client of the owner's account. */
  userClient: string;
  /** A product client that no credential depends on, to change and delete. */
  spareClient: string;
  customer: { email: string; token: string };
  otherCustomer: { email: string; token: string };
  targetCustomer: { email: string };
  /** A product device claimed by `customer`. */
  device: string;
  deviceSecret: string;
  /** A product device claimed by the owner. */
  ownerDevice: string;
  /** A webhook of the owner's account and one of the product, each with a delivery (a test event). */
  userHook: { id: string; delivery: string };
  productHook: { id: string; delivery: string };
  tokens: Record<CredentialId, string | undefined>;
}

async function call(method: string, path: string, init: { token?: string; json?: unknown; form?: Record<string, string>; headers?: Record<string, string>; body?: string | FormData } = {}): Promise<RawResponse> {
  return raw(`${server.url}${path}`, { method, ...init });
}

async function must(expected: number, r: Promise<RawResponse>, what: string): Promise<RawResponse> {
  const res = await r;
  assert.equal(res.status, expected, `fixture: ${what}: ${res.text}`);
  return res;
}

/** A webhook made by the owner at `base` (/v1/webhooks or a product's), with one delivery. */
async function newHook(token: string, base: string): Promise<{ id: string; delivery: string }> {
  const made = await must(201, call('POST', base, { token, json: { event: 'matrix', url: hookUrl } }), `webhook at ${base}`);
  const id = made.json.id as string;
  const test = await must(200, call('POST', `${base}/${id}/test`, { token, json: {} }), 'test event');
  return { id, delivery: test.json.delivery_id as string };
}

/** A version of the product's configuration history to point at: a fleet write by the owner. */
async function fleetVersion(fx: Fixture): Promise<number> {
  const r = await must(200, call('PUT', `/v1/products/${fx.product.id}/config`, { token: fx.owner.token, json: { rgb: { type: 'off' } } }), 'fleet write');
  return r.json.version as number;
}

async function signUp(prefix: string): Promise<{ username: string; password: string }> {
  const username = email(prefix);
  await must(201, call('POST', '/v1/users', { json: { username, password: PASSWORD } }), `sign up ${prefix}`);
  return { username, password: PASSWORD };
}

async function login(u: { username: string; password: string }, extra: Record<string, string> = {}): Promise<string> {
  const r = await must(200, call('POST', '/oauth/token', { form: { grant_type: 'password', username: u.username, password: u.password, client_id: 'particle-cli', client_secret: 'particle-cli', ...extra } }), `login ${u.username}`);
  return r.json.access_token as string;
}

async function user(prefix: string): Promise<User> {
  const u = await signUp(prefix);
  return { ...u, token: await login(u) };
}

async function newProduct(token: string, name: string): Promise<{ id: number; slug: string }> {
  const r = await must(201, call('POST', '/v1/user/products', { token, json: { product: { name, platform_id: 26 } } }), `product ${name}`);
  return r.json.product as { id: number; slug: string };
}

async function productClient(token: string, productId: number, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const r = await must(201, call('POST', `/v1/products/${productId}/clients`, { token, json: body }), 'product client');
  return r.json.client as { id: string; secret: string };
}

async function clientToken(c: { id: string; secret: string }): Promise<string> {
  const r = await must(200, call('POST', '/oauth/token', { headers: { authorization: basic(c.id, c.secret) }, form: { grant_type: 'client_credentials' } }), 'client_credentials');
  return r.json.access_token as string;
}

async function newCustomer(productId: number, c: { id: string; secret: string }, prefix: string): Promise<{ email: string; token: string }> {
  const address = email(prefix);
  const r = await must(201, call('POST', `/v1/products/${productId}/customers`, { headers: { authorization: basic(c.id, c.secret) }, form: { email: address, password: PASSWORD } }), 'customer');
  return { email: address, token: r.json.access_token as string };
}

async function provision(token: string, productId: number): Promise<{ id: string; secret: string }> {
  const r = await must(201, call('POST', '/v1/devices', { token, json: { product_id: productId } }), 'provision');
  return { id: r.json.id as string, secret: r.json.device_secret as string };
}

/** Connects the fixture's device as a plain MQTT device with a function `led` and a variable `temp`. */
async function connectDevice(id: string, secret: string): Promise<mqtt.MqttClient> {
  // No keep-alive: the test moves the server's clock on to expire tokens, and the gateway judges
  // keep-alives by that clock, so a device with one would be dropped as silent.
  const dev = await mqtt.connectAsync(server.mqttUrl, { clientId: id, username: id, password: secret, reconnectPeriod: 0, keepalive: 0 });
  await dev.subscribeAsync(`devices/${id}/cloud/#`);
  dev.on('message', (topic, payload) => {
    const req = JSON.parse(payload.toString()) as { id?: string };
    if (topic.endsWith('/cloud/call')) void dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: req.id, return_value: 1 }));
    if (topic.endsWith('/cloud/get')) void dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: req.id, result: 7 }));
    if (topic.endsWith('/cloud/config/set')) void dev.publishAsync(`devices/${id}/config/ack`, JSON.stringify({ id: req.id, status: 0 }));
  });
  await dev.publishAsync(`devices/${id}/hello`, JSON.stringify({ functions: ['led'], variables: { temp: 'int32' } }), { qos: 1 });
  return dev;
}

/**
 * One world: a product with its owner, a second team member (and a third), two customers (one
 * owns a device), a full-scope client and a customers:create client; another product of another
 * user; and dead tokens. The expired token expires when the caller advances the clock.
 */
async function buildFixture(): Promise<Fixture> {
  const [owner, otherUser, member, rival, extraMember, invitee] = await Promise.all([
    user('owner'), user('other'), user('member'), user('rival'), signUp('extra'), signUp('invitee'),
  ]);
  const [product, otherProduct] = await Promise.all([newProduct(owner.token, 'Matrix Fleet'), newProduct(rival.token, 'Rival Fleet')]);
  await Promise.all([
    must(201, call('POST', `/v1/products/${product.id}/team`, { token: owner.token, json: { username: member.username } }), 'invite member'),
    must(201, call('POST', `/v1/products/${product.id}/team`, { token: owner.token, json: { username: extraMember.username } }), 'invite extra member'),
  ]);
  const [userClient, backend, app, spare, rivalBackend] = await Promise.all([
    must(201, call('POST', '/v1/clients', { token: owner.token, json: { name: 'owner tool' } }), 'user client').then((r) => r.json.client.id as string),
    productClient(owner.token, product.id, { name: 'backend' }),
    productClient(owner.token, product.id, { name: 'app', scope: 'customers:create' }),
    productClient(owner.token, product.id, { name: 'spare' }),
    productClient(rival.token, otherProduct.id, { name: 'rival backend' }),
  ]);
  const [productToken, customersCreateToken, otherProductToken, customer, otherCustomer, targetCustomer, { id: device, secret: deviceSecret }, { id: ownerDevice }] = await Promise.all([
    clientToken(backend), clientToken(app), clientToken(rivalBackend),
    newCustomer(product.id, app, 'alice'), newCustomer(product.id, app, 'bob'), newCustomer(product.id, app, 'carol'),
    provision(owner.token, product.id), provision(owner.token, product.id),
  ]);
  const code = await must(200, call('POST', `/v1/products/${product.id}/device_claims`, { token: customer.token, json: {} }), 'claim code');
  await server.skyport.services.claims.redeem(device, code.json.claim_code as string);
  await must(200, call('POST', '/v1/devices', { token: owner.token, json: { id: ownerDevice } }), 'owner claims by id');

  const [userHook, productHook] = await Promise.all([newHook(owner.token, '/v1/webhooks'), newHook(owner.token, `/v1/products/${product.id}/webhooks`)]);
  // Firmware version 1 and a group named "matrix", for the firmware and group routes.
  await Promise.all([
    must(201, call('POST', `/v1/products/${product.id}/firmware`, { token: owner.token, body: firmwareForm(product.id, 1) }), 'firmware upload'),
    must(201, call('POST', `/v1/products/${product.id}/groups`, { token: owner.token, json: { name: 'matrix' } }), 'group'),
  ]);
  const [expired, revoked] = await Promise.all([login(owner, { expires_in: '60' }), login(owner)]);
  await must(200, call('DELETE', '/v1/access_tokens/current', { token: revoked }), 'revoke');

  return {
    owner, otherUser, member,
    extraMember: { username: extraMember.username },
    invitee: { username: invitee.username },
    product, otherProduct,
    userClient, spareClient: spare.id,
    customer, otherCustomer, targetCustomer: { email: targetCustomer.email },
    device, deviceSecret, ownerDevice,
    userHook, productHook,
    tokens: {
      none: undefined,
      malformed: '!!!',
      expired,
      revoked,
      owner: owner.token,
      otherUser: otherUser.token,
      member: member.token,
      product: productToken,
      customer: customer.token,
      otherCustomer: otherCustomer.token,
      customersCreate: customersCreateToken,
      otherProduct: otherProductToken,
    },
  };
}

/** Fixtures made together, then the clock moved on so that their expires_in=60 tokens are dead. */
async function buildFixtures(n: number): Promise<Fixture[]> {
  if (n === 0) return [];
  const out = await Promise.all(Array.from({ length: n }, () => buildFixture()));
  clock.advance(61_000);
  return out;
}

/** The user whose password or MFA a body names: the caller if it is a user, else the owner. */
function userOf(fx: Fixture, cred: CredentialId): User {
  if (cred === 'otherUser') return fx.otherUser;
  if (cred === 'member') return fx.member;
  return fx.owner;
}

interface CellRequest {
  path: string;
  /** A raw body (send its Content-Type in headers), or a multipart form. */
  body?: string | FormData;
  json?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

const enc = encodeURIComponent;

/** Turns MFA on for a user, through the API. */
async function enableMfa(u: User): Promise<void> {
  const begun = await must(200, call('GET', '/v1/user/mfa-enable', { token: u.token }), 'mfa begin');
  await must(200, call('POST', '/v1/user/mfa-enable', { token: u.token, json: { mfa_token: begun.json.mfa_token, otp: totpNow(begun.json.secret as string, clock.now()) } }), 'mfa confirm');
}

/**
 * The requests of the webhook routes at one place: `prefix` as the table spells it, `kind` the
 * rest (/v1/webhooks, /integrations…). They point at the fixture's webhook of that place; a
 * deletion gets a webhook of the owner's made for the cell, so that the cells stay independent.
 */
function webhookRequests(prefix: string, hook: (fx: Fixture) => { id: string; delivery: string }, ownerToken: (fx: Fixture) => string, kind: string): Record<string, (fx: Fixture) => CellRequest | Promise<CellRequest>> {
  const table = `${prefix === '/v1' ? '' : prefix}${kind}`;
  const real = (fx: Fixture) => `${prefix === '/v1' ? '' : `/v1/products/${fx.product.id}`}${kind}`;
  const one = (fx: Fixture) => `${real(fx)}/${hook(fx).id}`;
  return {
    [`GET ${table}`]: (fx) => ({ path: real(fx) }),
    [`POST ${table}`]: (fx) => ({ path: real(fx), json: { integration_type: 'Webhook', event: 'matrix', url: hookUrl } }),
    [`GET ${table}/{id}`]: (fx) => ({ path: one(fx) }),
    [`PUT ${table}/{id}`]: (fx) => ({ path: one(fx), json: { name: 'renamed' } }),
    [`DELETE ${table}/{id}`]: async (fx) => ({ path: `${real(fx)}/${(await newHookAt(ownerToken(fx), real(fx)))}` }),
    [`GET ${table}/{id}/deliveries`]: (fx) => ({ path: `${one(fx)}/deliveries` }),
    [`POST ${table}/{id}/deliveries/{deliveryId}/resend`]: (fx) => ({ path: `${one(fx)}/deliveries/${hook(fx).delivery}/resend`, json: {} }),
    [`POST ${table}/{id}/replay`]: (fx) => ({ path: `${one(fx)}/replay`, json: { from: new Date(clock.nowMs() - 3600_000).toISOString(), to: new Date(clock.nowMs() + 60_000).toISOString() } }),
    [`POST ${table}/{id}/test`]: (fx) => ({ path: `${one(fx)}/test`, json: { data: 'matrix' } }),
    [`POST ${table}/{id}/secret`]: (fx) => ({ path: `${one(fx)}/secret`, json: {} }),
    // The preview is at /webhooks only.
    ...(kind.endsWith('/webhooks') ? { [`POST ${table}/preview`]: (fx: Fixture) => ({ path: `${real(fx)}/preview`, json: { event: 'matrix', url: hookUrl, sample: { data: 'matrix' } } }) } : {}),
  };
}

/** A firmware upload as particle-api-js sends it: a valid binary of the product's and its version. */
function firmwareForm(productId: number, version: number): FormData {
  const form = new FormData();
  form.append('file', new Blob([firmwareBinary(productId, version)]), 'firmware.bin');
  form.append('version', String(version));
  return form;
}

/** A rollout of version 1 of the fixture's product (one per fixture: a product has one under way at a time); answers its path. */
const rollouts = new WeakMap<Fixture, Promise<string>>();
function rolloutOf(fx: Fixture, waves?: unknown[]): Promise<string> {
  let made = rollouts.get(fx);
  if (!made) {
    made = must(201, call('POST', `/v1/products/${fx.product.id}/firmware/rollouts`, { token: fx.owner.token, json: { version: 1, ...(waves ? { waves } : {}) } }), 'rollout')
      .then((r) => `/v1/products/${fx.product.id}/firmware/rollouts/${r.json.id as number}`);
    rollouts.set(fx, made);
  }
  return made;
}

/** Versions and group names made by cells of the shared fixture, each new. */
let made = 100;

async function newHookAt(token: string, base: string): Promise<string> {
  return (await must(201, call('POST', base, { token, json: { integration_type: 'Webhook', event: 'matrix', url: hookUrl } }), `webhook at ${base}`)).json.id as string;
}

/**
 * The request of each route: valid in shape (so that validation never answers before the
 * guard), pointing at the fixture's product, device, client and customer.
 */
const REQUESTS: Record<string, (fx: Fixture, cred: CredentialId) => CellRequest | Promise<CellRequest>> = {
  'GET /healthz': () => ({ path: '/healthz' }),
  'GET /v1/openapi.json': () => ({ path: '/v1/openapi.json' }),
  'POST /v1/users': () => ({ path: '/v1/users', json: { username: email('signup'), password: PASSWORD } }),
  'GET /.well-known/oauth-authorization-server': () => ({ path: '/.well-known/oauth-authorization-server' }),
  'POST /oauth/token': () => ({ path: '/oauth/token', form: { grant_type: 'client_credentials' } }),
  'POST /oauth/introspect': (fx) => ({ path: '/oauth/introspect', form: { token: fx.owner.token } }),
  'POST /oauth/revoke': (fx) => ({ path: '/oauth/revoke', form: { token: fx.owner.token } }),

  'GET /v1/access_tokens/current': () => ({ path: '/v1/access_tokens/current' }),
  'GET /v1/device_gateway': () => ({ path: '/v1/device_gateway' }),
  'DELETE /v1/access_tokens/current': () => ({ path: '/v1/access_tokens/current' }),
  'DELETE /v1/access_tokens': () => ({ path: '/v1/access_tokens' }),
  'DELETE /v1/access_tokens/{token}': (fx, cred) => ({ path: `/v1/access_tokens/${enc(fx.tokens[cred] ?? '0'.repeat(40))}` }),
  'POST /v1/access_tokens': () => ({ path: '/v1/access_tokens', json: {} }),
  'GET /v1/user/access_tokens': () => ({ path: '/v1/user/access_tokens' }),
  'DELETE /v1/user/access_tokens/{id}': async (fx) => {
    // A fresh token of the owner's; its id is the start of its SHA-256 digest (docs/api.md).
    const login = await must(200, call('POST', '/oauth/token', { headers: { authorization: basic('particle', 'particle') }, form: { grant_type: 'password', username: fx.owner.username, password: fx.owner.password } }), 'owner login');
    return { path: `/v1/user/access_tokens/${createHash('sha256').update(login.json.access_token as string).digest('hex').slice(0, 16)}` };
  },

  'GET /v1/user': () => ({ path: '/v1/user' }),
  'PUT /v1/user': () => ({ path: '/v1/user', json: { account_info: { first_name: 'Matrix' } } }),
  'DELETE /v1/user': (fx, cred) => ({ path: '/v1/user', json: { password: userOf(fx, cred).password } }),
  'GET /v1/user/mfa-enable': () => ({ path: '/v1/user/mfa-enable' }),
  'POST /v1/user/mfa-enable': async (fx, cred) => {
    const u = userOf(fx, cred);
    const begun = await must(200, call('GET', '/v1/user/mfa-enable', { token: u.token }), 'mfa begin');
    return { path: '/v1/user/mfa-enable', json: { mfa_token: begun.json.mfa_token, otp: totpNow(begun.json.secret as string, clock.now()) } };
  },
  'PUT /v1/user/mfa-disable': async (fx, cred) => {
    const u = userOf(fx, cred);
    await enableMfa(u);
    return { path: '/v1/user/mfa-disable', json: { current_password: u.password } };
  },
  'GET /v1/user/security_events': () => ({ path: '/v1/user/security_events' }),

  'GET /v1/clients': () => ({ path: '/v1/clients' }),
  'POST /v1/clients': () => ({ path: '/v1/clients', json: { name: 'matrix' } }),
  'PUT /v1/clients/{clientId}': (fx) => ({ path: `/v1/clients/${fx.userClient}`, json: { name: 'renamed' } }),
  'DELETE /v1/clients/{clientId}': (fx) => ({ path: `/v1/clients/${fx.userClient}` }),
  'GET /v1/products/{productIdOrSlug}/clients': (fx) => ({ path: `/v1/products/${fx.product.id}/clients` }),
  'POST /v1/products/{productIdOrSlug}/clients': (fx) => ({ path: `/v1/products/${fx.product.id}/clients`, json: { name: 'matrix' } }),
  'PUT /v1/products/{productIdOrSlug}/clients/{clientId}': (fx) => ({ path: `/v1/products/${fx.product.id}/clients/${fx.spareClient}`, json: { name: 'renamed' } }),
  'DELETE /v1/products/{productIdOrSlug}/clients/{clientId}': (fx) => ({ path: `/v1/products/${fx.product.id}/clients/${fx.spareClient}` }),

  'POST /v1/user/products': () => ({ path: '/v1/user/products', json: { product: { name: 'Another Fleet', platform_id: 26 } } }),
  'GET /v1/user/products': () => ({ path: '/v1/user/products' }),
  'GET /v1/products': () => ({ path: '/v1/products' }),
  'GET /v1/products/{productIdOrSlug}': (fx) => ({ path: `/v1/products/${fx.product.slug}` }),
  'PUT /v1/products/{productIdOrSlug}': (fx) => ({ path: `/v1/products/${fx.product.id}`, json: { description: 'changed' } }),
  'DELETE /v1/products/{productIdOrSlug}': (fx) => ({ path: `/v1/products/${fx.product.id}?confirm=${fx.product.slug}` }),
  'GET /v1/products/{productIdOrSlug}/team': (fx) => ({ path: `/v1/products/${fx.product.id}/team` }),
  'POST /v1/products/{productIdOrSlug}/team': (fx) => ({ path: `/v1/products/${fx.product.id}/team`, json: { username: fx.invitee.username } }),
  'DELETE /v1/products/{productIdOrSlug}/team/{username}': (fx) => ({ path: `/v1/products/${fx.product.id}/team/${enc(fx.extraMember.username)}` }),

  'POST /v1/products/{productIdOrSlug}/customers': (fx) => ({ path: `/v1/products/${fx.product.id}/customers`, form: { email: email('newcust'), password: PASSWORD } }),
  'GET /v1/products/{productIdOrSlug}/customers': (fx) => ({ path: `/v1/products/${fx.product.id}/customers` }),
  'PUT /v1/products/{productIdOrSlug}/customers/{email}': (fx) => ({ path: `/v1/products/${fx.product.id}/customers/${enc(fx.targetCustomer.email)}`, json: { password: 'a new password' } }),
  'DELETE /v1/products/{productIdOrSlug}/customers/{email}': (fx) => ({ path: `/v1/products/${fx.product.id}/customers/${enc(fx.targetCustomer.email)}` }),

  'POST /v1/devices': (fx) => ({ path: '/v1/devices', json: { product_id: fx.product.id } }),
  'GET /v1/devices': () => ({ path: '/v1/devices' }),
  'GET /v1/devices/{deviceId}': (fx) => ({ path: `/v1/devices/${fx.device}` }),
  'PUT /v1/devices/{deviceId}': (fx) => ({ path: `/v1/devices/${fx.device}`, json: { notes: 'seen by the matrix' } }),
  'DELETE /v1/devices/{deviceId}': (fx) => ({ path: `/v1/devices/${fx.device}` }),
  'POST /v1/device_claims': () => ({ path: '/v1/device_claims', json: {} }),
  'POST /v1/products/{productIdOrSlug}/device_claims': (fx) => ({ path: `/v1/products/${fx.product.id}/device_claims`, json: {} }),
  'GET /v1/products/{productIdOrSlug}/devices': (fx) => ({ path: `/v1/products/${fx.product.id}/devices` }),
  'POST /v1/products/{productIdOrSlug}/devices': (fx) => ({ path: `/v1/products/${fx.product.id}/devices`, json: { id: fx.device } }),
  'POST /v1/products/{productIdOrSlug}/device_identities': (fx) => ({ path: `/v1/products/${fx.product.id}/device_identities`, json: { quantity: 1 } }),
  'GET /v1/products/{productIdOrSlug}/devices/{deviceId}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}` }),
  'PUT /v1/products/{productIdOrSlug}/devices/{deviceId}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}`, json: { notes: 'seen by the matrix' } }),
  'DELETE /v1/products/{productIdOrSlug}/devices/{deviceId}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}` }),
  'DELETE /v1/products/{productIdOrSlug}/devices/{deviceId}/owner': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/owner` }),

  'PUT /v1/products/{productIdOrSlug}/devices': (fx) => ({ path: `/v1/products/${fx.product.id}/devices`, json: { action: 'groups', devices: [fx.device], metadata: { add: ['matrix'] } } }),
  'GET /v1/products/{productIdOrSlug}/firmware': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware` }),
  'POST /v1/products/{productIdOrSlug}/firmware': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware`, body: firmwareForm(fx.product.id, made++) }),
  'GET /v1/products/{productIdOrSlug}/firmware/{version}': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/1` }),
  'PUT /v1/products/{productIdOrSlug}/firmware/{version}': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/1`, json: { title: 'matrix' } }),
  'DELETE /v1/products/{productIdOrSlug}/firmware/{version}': async (fx) => {
    const version = made++;
    await must(201, call('POST', `/v1/products/${fx.product.id}/firmware`, { token: fx.owner.token, body: firmwareForm(fx.product.id, version) }), 'firmware to delete');
    return { path: `/v1/products/${fx.product.id}/firmware/${version}` };
  },
  'GET /v1/products/{productIdOrSlug}/firmware/{version}/binary': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/1/binary` }),
  'PUT /v1/products/{productIdOrSlug}/firmware/release': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/release`, json: { version: 1, product_default: true } }),
  'GET /v1/products/{productIdOrSlug}/firmware/updates': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/updates` }),
  'GET /v1/products/{productIdOrSlug}/firmware/signing-key': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/signing-key` }),
  'PUT /v1/products/{productIdOrSlug}/firmware/signing-key': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/signing-key`, json: { public_key: SIGNING_KEY } }),
  'DELETE /v1/products/{productIdOrSlug}/firmware/signing-key': async (fx) => {
    await must(200, call('PUT', `/v1/products/${fx.product.id}/firmware/signing-key`, { token: fx.owner.token, json: { public_key: SIGNING_KEY } }), 'signing key');
    return { path: `/v1/products/${fx.product.id}/firmware/signing-key` };
  },
  'GET /v1/products/{productIdOrSlug}/impact': (fx) => ({ path: `/v1/products/${fx.product.id}/impact?action=edit_groups_for_firmware&firmware_version=1&product_default=true` }),
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/rollouts`, json: { version: 1 } }),
  'GET /v1/products/{productIdOrSlug}/firmware/rollouts': (fx) => ({ path: `/v1/products/${fx.product.id}/firmware/rollouts` }),
  'GET /v1/products/{productIdOrSlug}/firmware/rollouts/{id}': async (fx) => ({ path: await rolloutOf(fx) }),
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts/{id}/pause': async (fx) => ({ path: `${await rolloutOf(fx)}/pause`, json: {} }),
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts/{id}/resume': async (fx) => {
    const path = await rolloutOf(fx);
    await must(200, call('POST', `${path}/pause`, { token: fx.owner.token, json: {} }), 'rollout paused');
    return { path: `${path}/resume` };
  },
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts/{id}/abort': async (fx) => ({ path: `${await rolloutOf(fx)}/abort`, json: {} }),
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts/{id}/next': async (fx) => ({ path: `${await rolloutOf(fx, [{ count: 1 }])}/next` }),
  'GET /v1/products/{productIdOrSlug}/groups': (fx) => ({ path: `/v1/products/${fx.product.id}/groups` }),
  'POST /v1/products/{productIdOrSlug}/groups': (fx) => ({ path: `/v1/products/${fx.product.id}/groups`, json: { name: `made-${made++}` } }),
  'GET /v1/products/{productIdOrSlug}/groups/{groupName}': (fx) => ({ path: `/v1/products/${fx.product.id}/groups/matrix` }),
  'PUT /v1/products/{productIdOrSlug}/groups/{groupName}': (fx) => ({ path: `/v1/products/${fx.product.id}/groups/matrix`, json: { description: 'seen by the matrix' } }),
  'DELETE /v1/products/{productIdOrSlug}/groups/{groupName}': async (fx) => {
    const name = `gone-${made++}`;
    await must(201, call('POST', `/v1/products/${fx.product.id}/groups`, { token: fx.owner.token, json: { name } }), 'group to delete');
    return { path: `/v1/products/${fx.product.id}/groups/${name}` };
  },

  'POST /v1/devices/{deviceId}/{name}': (fx) => ({ path: `/v1/devices/${fx.device}/led`, json: { arg: 'on' } }),
  'GET /v1/devices/{deviceId}/{name}': (fx) => ({ path: `/v1/devices/${fx.device}/temp` }),
  'PUT /v1/devices/{deviceId}/ping': (fx) => ({ path: `/v1/devices/${fx.device}/ping` }),
  'POST /v1/products/{productIdOrSlug}/devices/{deviceId}/{name}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/led`, json: { arg: 'on' } }),
  'GET /v1/products/{productIdOrSlug}/devices/{deviceId}/{name}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/temp` }),
  'PUT /v1/products/{productIdOrSlug}/devices/{deviceId}/ping': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/ping` }),

  'GET /v1/devices/events': () => ({ path: '/v1/devices/events' }),
  'GET /v1/devices/events/{prefix}': () => ({ path: '/v1/devices/events/spark' }),
  'GET /v1/devices/{deviceId}/events': (fx) => ({ path: `/v1/devices/${fx.device}/events` }),
  'GET /v1/devices/{deviceId}/events/{prefix}': (fx) => ({ path: `/v1/devices/${fx.device}/events/spark` }),
  'GET /v1/products/{productIdOrSlug}/events': (fx) => ({ path: `/v1/products/${fx.product.id}/events` }),
  'GET /v1/products/{productIdOrSlug}/events/{prefix}': (fx) => ({ path: `/v1/products/${fx.product.id}/events/spark` }),
  'GET /v1/products/{productIdOrSlug}/devices/{deviceId}/events': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/events` }),
  'GET /v1/products/{productIdOrSlug}/devices/{deviceId}/events/{prefix}': (fx) => ({ path: `/v1/products/${fx.product.id}/devices/${fx.device}/events/spark` }),
  'GET /v1/products/{productIdOrSlug}/config': (fx) => ({ path: `/v1/products/${fx.product.id}/config`, headers: { accept: 'application/schema+json' } }),
  'GET /v1/products/{productIdOrSlug}/config/{deviceId}': (fx) => ({ path: `/v1/products/${fx.product.id}/config/${fx.device}`, headers: { accept: 'application/schema+json' } }),
  'PUT /v1/products/{productIdOrSlug}/config': (fx) => ({ path: `/v1/products/${fx.product.id}/config`, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(defaultSchema()) }),
  'PUT /v1/products/{productIdOrSlug}/config/{deviceId}': (fx) => ({ path: `/v1/products/${fx.product.id}/config/${fx.device}`, json: { geofence: { interval: 5 } } }),
  'GET /v1/products/{productIdOrSlug}/config/rollout': (fx) => ({ path: `/v1/products/${fx.product.id}/config/rollout` }),
  'GET /v1/products/{productIdOrSlug}/config/{deviceId}/explain': (fx) => ({ path: `/v1/products/${fx.product.id}/config/${fx.device}/explain` }),
  'GET /v1/products/{productIdOrSlug}/config/history': (fx) => ({ path: `/v1/products/${fx.product.id}/config/history` }),
  'GET /v1/products/{productIdOrSlug}/config/history/{version}': async (fx) => ({ path: `/v1/products/${fx.product.id}/config/history/${await fleetVersion(fx)}` }),
  'GET /v1/products/{productIdOrSlug}/config/history/{version}/diff': async (fx) => ({ path: `/v1/products/${fx.product.id}/config/history/${await fleetVersion(fx)}/diff` }),
  'POST /v1/products/{productIdOrSlug}/config/history/{version}/rollback': async (fx) => ({ path: `/v1/products/${fx.product.id}/config/history/${await fleetVersion(fx)}/rollback` }),
  'DELETE /v1/products/{productIdOrSlug}/config': (fx) => ({ path: `/v1/products/${fx.product.id}/config`, headers: { 'content-type': 'application/schema+json' }, body: '{}' }),
  'POST /v1/devices/events': () => ({ path: '/v1/devices/events', json: { name: 'matrix', data: 'x' } }),
  'POST /v1/products/{productIdOrSlug}/events': (fx) => ({ path: `/v1/products/${fx.product.id}/events`, json: { name: 'matrix', data: 'x' } }),

  ...webhookRequests('/v1', (fx) => fx.userHook, (fx) => fx.owner.token, '/v1/webhooks'),
  ...webhookRequests('/v1', (fx) => fx.userHook, (fx) => fx.owner.token, '/v1/integrations'),
  ...webhookRequests('/v1/products/{productIdOrSlug}', (fx) => fx.productHook, (fx) => fx.owner.token, '/webhooks'),
  ...webhookRequests('/v1/products/{productIdOrSlug}', (fx) => fx.productHook, (fx) => fx.owner.token, '/integrations'),
};

/** Credentials that have no business seeing the fixture's product, devices or people. */
const OUTSIDERS: ReadonlySet<CredentialId> = new Set(['none', 'malformed', 'expired', 'revoked', 'otherUser', 'otherCustomer', 'customersCreate', 'otherProduct']);

async function fire(rule: RouteRule, fx: Fixture, cred: CredentialId): Promise<RawResponse> {
  const req = await REQUESTS[routeKey(rule)]!(fx, cred);
  const headers: Record<string, string> = { ...req.headers };
  const token = fx.tokens[cred];
  if (rule.place !== 'path' && token !== undefined) headers.authorization = `Bearer ${token}`;
  return call(rule.method, req.path, { headers, ...(req.json === undefined ? {} : { json: req.json }), ...(req.form === undefined ? {} : { form: req.form }), ...(req.body === undefined ? {} : { body: req.body }) });
}

/** Checks one cell; answers a line describing the mismatch, or undefined. */
function judge(rule: RouteRule, fx: Fixture, cred: CredentialId, res: RawResponse): string | undefined {
  const want: Outcome = rule.expect[cred];
  const ok = want === 'ok' ? res.status >= 200 && res.status < 300 : res.status === want;
  if (!ok) return `${cred}: expected ${want === 'ok' ? '2xx' : want}, got ${res.status} ${res.text.slice(0, 200)}`;
  if (res.status < 300 && OUTSIDERS.has(cred)) {
    // An allowed answer to an outsider must not name what belongs to the product.
    const secrets = [fx.device, fx.ownerDevice, fx.product.slug, fx.customer.email, fx.targetCustomer.email, fx.owner.username, fx.member.username];
    if (cred !== 'otherCustomer') secrets.push(fx.otherCustomer.email);
    const leaked = secrets.filter((s) => res.text.includes(s));
    if (leaked.length > 0) return `${cred}: a ${res.status} answer names ${leaked.join(', ')}`;
  }
  return undefined;
}

let shared: Fixture;

test('the matrix covers every route of the API, and only those', async () => {
  const r = await call('GET', '/v1/openapi.json');
  assert.equal(r.status, 200);
  const documented = new Set<string>();
  for (const [path, item] of Object.entries(r.json.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item)) {
      if (['get', 'put', 'post', 'delete', 'patch', 'options', 'head'].includes(method)) documented.add(`${method.toUpperCase()} ${path}`);
    }
  }
  const table = new Set(MATRIX.filter((m) => !m.undocumented).map(routeKey));
  const missing = [...documented].filter((k) => !table.has(k));
  const stale = [...table].filter((k) => !documented.has(k));
  assert.deepEqual(missing, [], `routes of the app missing from test/authorization-matrix.table.ts: ${missing.join(', ')}`);
  assert.deepEqual(stale, [], `routes in the matrix that the app does not have: ${stale.join(', ')}`);
  assert.equal(new Set(MATRIX.map(routeKey)).size, MATRIX.length, 'each route once');
  assert.deepEqual(Object.keys(REQUESTS).sort(), MATRIX.map(routeKey).sort(), 'a request for every route of the matrix');
  for (const m of MATRIX) assert.deepEqual(Object.keys(m.expect).sort(), CREDENTIALS.map((c) => c.id).sort(), routeKey(m));
});

test('docs/security.md shows the matrix as `npm run docs:matrix` writes it', () => {
  const doc = readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8');
  assert.match(doc, /^## Authorization matrix$/m);
  assert.equal(matrixOf(doc), renderMatrix(), 'docs/security.md is out of date: run npm run docs:matrix');
});

/**
 * Destructive routes whose request builder changes the fixture before the request is sent
 * (enrols MFA, sets a signing key, pauses the rollout): every cell of theirs, refused or not,
 * gets a fixture of its own.
 */
const PREPARES = new Set([
  'POST /v1/user/mfa-enable',
  'PUT /v1/user/mfa-disable',
  'DELETE /v1/products/{productIdOrSlug}/firmware/signing-key',
  'POST /v1/products/{productIdOrSlug}/firmware/rollouts/{id}/resume',
]);

/**
 * Whether a cell needs a fixture of its own: one of a destructive route that may act (it is
 * expected to succeed, or to answer 404 or 409 after the guard let it through), or whose
 * request builder changes the fixture. A cell the guard refuses (400, 401, 403) changes nothing
 * and shares the fixture; should the guard wrongly let it through, that cell fails, and later
 * cells of the shared fixture may fail with it.
 */
function ownFixture(rule: RouteRule, cred: CredentialId): boolean {
  if (!rule.destructive) return false;
  const want = rule.expect[cred];
  return PREPARES.has(routeKey(rule)) || !(want === 400 || want === 401 || want === 403);
}

test('every route × credential answers as the matrix says', async (t) => {
  shared = (await buildFixtures(1))[0] as Fixture;
  // The shared device is connected, so that allowed calls, reads and pings reach it.
  const dev = await connectDevice(shared.device, shared.deviceSecret);
  t.after(() => dev.end(true));
  for (const rule of MATRIX) {
    await t.test(routeKey(rule), async () => {
      const mine = CREDENTIALS.map((c) => ownFixture(rule, c.id));
      const own = await buildFixtures(mine.filter(Boolean).length);
      let next = 0;
      const fixtures = mine.map((m) => (m ? own[next++] : shared));
      // Cells of a shared fixture change nothing others rely on, and cells that may change
      // something each have their own: either way they are independent and may run together.
      const problems = await Promise.all(CREDENTIALS.map(async (c, i) => {
        const fx = fixtures[i] as Fixture;
        return judge(rule, fx, c.id, await fire(rule, fx, c.id));
      }));
      const found = problems.filter((p) => p !== undefined);
      assert.deepEqual(found, [], `${routeKey(rule)}:\n  ${found.join('\n  ')}`);
    });
  }
});
