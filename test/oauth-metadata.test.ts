import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { loadSettings } from '../src/config/settings.js';

// A standard OAuth client library (oauth4webapi, which openid-client is built on) finds
// Skyport's endpoints through RFC 8414 metadata and uses them: client credentials, refresh,
// introspection (RFC 7662) and revocation (RFC 7009), over a real socket.

const METADATA = '/.well-known/oauth-authorization-server';
// The test server speaks plain HTTP on 127.0.0.1; the library refuses http:// unless told.
const insecure = { [oauth.allowInsecureRequests]: true };

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

async function discover(issuer: URL): Promise<oauth.AuthorizationServer> {
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
}

/** A product's full-scope client, whose tokens come with refresh tokens. */
async function productClient(): Promise<{ client: oauth.Client; secret: string }> {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const created = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'standard client', type: 'installed' } });
  assert.equal(created.status, 201, created.text);
  return { client: { client_id: created.json.client.id as string }, secret: created.json.client.secret as string };
}

test('discovery: the metadata names the issuer the client asked, the endpoints, grants and client authentication', async () => {
  const issuer = new URL(server.url);
  const as = await discover(issuer);
  assert.equal(as.issuer, server.url);
  assert.equal(as.token_endpoint, `${server.url}/oauth/token`);
  assert.equal(as.introspection_endpoint, `${server.url}/oauth/introspect`);
  assert.equal(as.revocation_endpoint, `${server.url}/oauth/revoke`);
  assert.deepEqual(as.grant_types_supported, ['password', 'client_credentials', 'refresh_token', 'urn:custom:mfa-otp', 'urn:custom:recovery-code']);
  for (const methods of [as.token_endpoint_auth_methods_supported, as.introspection_endpoint_auth_methods_supported, as.revocation_endpoint_auth_methods_supported]) {
    assert.deepEqual(methods, ['client_secret_basic', 'client_secret_post']);
  }
  assert.deepEqual(as.scopes_supported, ['*:*', 'customers:create']);
  assert.deepEqual(as.response_types_supported, [], 'no authorization endpoint, so no response type');
  assert.equal(as.authorization_endpoint, undefined);
});

test('client credentials, refresh, introspection and revocation through the discovered endpoints', async () => {
  const as = await discover(new URL(server.url));
  const { client, secret } = await productClient();
  const basicAuth = oauth.ClientSecretBasic(secret);
  const postAuth = oauth.ClientSecretPost(secret);

  const issued = await oauth.processClientCredentialsResponse(as, client,
    await oauth.clientCredentialsGrantRequest(as, client, basicAuth, new URLSearchParams({ scope: '*:*' }), insecure));
  assert.equal(issued.token_type, 'bearer');
  assert.ok(issued.expires_in !== undefined && issued.expires_in > 0);
  assert.equal(typeof issued.refresh_token, 'string');
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: issued.access_token })).status, 200);

  const renewed = await oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, postAuth, issued.refresh_token as string, insecure));
  assert.notEqual(renewed.access_token, issued.access_token);

  const live = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, postAuth, renewed.access_token, insecure));
  assert.equal(live.active, true);
  assert.equal(live.client_id, client.client_id);
  assert.equal(live.token_type, 'bearer');

  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, basicAuth, renewed.access_token, insecure));
  const gone = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, basicAuth, renewed.access_token, insecure));
  assert.equal(gone.active, false);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: renewed.access_token })).status, 401);

  // A wrong secret: Particle's wire format answers 400 invalid_client with a Basic challenge
  // (docs/errors.md), which the library reports as the server's challenge.
  const refused = await oauth.processClientCredentialsResponse(as, client,
    await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost('not the secret'), new URLSearchParams(), insecure)).then(() => assert.fail('expected a refusal'), (e: unknown) => e);
  assert.ok(refused instanceof oauth.WWWAuthenticateChallengeError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.cause[0]?.scheme, 'basic');
  assert.equal(((await refused.response.json()) as { error: string }).error, 'invalid_client');
});

test('the issuer follows the request: its Host, and X-Forwarded-Proto and -Host only from a proxy TRUST_PROXY names', async () => {
  const direct = await raw(`${server.url}${METADATA}`, { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' } });
  assert.equal(direct.status, 200, direct.text);
  assert.equal(direct.json.issuer, server.url, 'forwarded headers are ignored without TRUST_PROXY');
  assert.match(direct.headers.get('vary') ?? '', /Host/);

  const proxied = await startTestServer({ env: { TRUST_PROXY: 'loopback' } });
  try {
    const r = await raw(`${proxied.url}${METADATA}`, { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' } });
    assert.equal(r.json.issuer, 'https://api.example.com');
    assert.equal(r.json.token_endpoint, 'https://api.example.com/oauth/token');
    for (const [header, value] of [['x-forwarded-host', 'api.example.com/evil'], ['x-forwarded-host', 'user@api.example.com'], ['x-forwarded-proto', 'ftp']] as const) {
      const bad = await raw(`${proxied.url}${METADATA}`, { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com', [header]: value } });
      assert.equal(bad.status, 400, `${header}: ${value}`);
      assert.equal(bad.json.error, 'invalid_request');
    }
  } finally {
    await proxied.close();
  }
});

test('PUBLIC_URL fixes the issuer whatever the request says, and is an origin', async () => {
  const fixed = await startTestServer({ env: { PUBLIC_URL: 'https://Skyport.example.com/', TRUST_PROXY: 'loopback' } });
  try {
    const r = await raw(`${fixed.url}${METADATA}`, { headers: { 'x-forwarded-host': 'other.example.com' } });
    assert.equal(r.json.issuer, 'https://skyport.example.com');
    assert.equal(r.json.revocation_endpoint, 'https://skyport.example.com/oauth/revoke');
    assert.equal(r.headers.get('vary'), null);
    // Devices connect to the same public host, on the gateway's port.
    const { token } = await signUp(fixed.url);
    const gateway = await raw(`${fixed.url}/v1/device_gateway`, { token, headers: { 'x-forwarded-host': 'other.example.com' } });
    assert.equal(gateway.json.mqtt_url, `mqtt://skyport.example.com:${new URL(fixed.mqttUrl).port}`);
  } finally {
    await fixed.close();
  }
  assert.equal(loadSettings({ PUBLIC_URL: 'http://localhost:8080' }).publicUrl, 'http://localhost:8080');
  assert.equal(loadSettings({}).publicUrl, undefined);
  for (const bad of ['skyport.example.com', 'ftp://skyport.example.com', 'https://skyport.example.com/api', 'https://a@skyport.example.com', 'https://skyport.example.com?x=1']) {
    assert.throws(() => loadSettings({ PUBLIC_URL: bad }), /^SettingsError: PUBLIC_URL must be/, bad);
  }
});

test('GET /v1/device_gateway: where devices connect, on the host the request came to; a token is needed', async () => {
  const { token } = await signUp(server.url);
  const r = await raw(`${server.url}/v1/device_gateway`, { token });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { mqtt_url: server.mqttUrl, mqtt_ws_url: null });
  const named = await raw(`${server.url}/v1/device_gateway`, { token, headers: { host: 'skyport.example.com:8080' } });
  assert.equal(named.json.mqtt_url, `mqtt://skyport.example.com:${new URL(server.mqttUrl).port}`);
  const none = await raw(`${server.url}/v1/device_gateway`);
  assert.equal(none.status, 400);
  assert.equal(none.json.error, 'invalid_request');
  const unknown = await raw(`${server.url}/v1/device_gateway`, { token: 'never-issued' });
  assert.equal(unknown.status, 401);
  assert.equal(unknown.json.error, 'invalid_token');
  const badHost = await raw(`${server.url}/v1/device_gateway`, { token, headers: { host: 'user@evil.example.com' } });
  assert.equal(badHost.status, 400, badHost.text);
  assert.equal(badHost.json.error, 'invalid_request');
});

test('the metadata is in the OpenAPI document', async () => {
  const doc = (await raw(`${server.url}/v1/openapi.json`)).json;
  const get = doc.paths[METADATA]?.get;
  assert.ok(get, 'GET /.well-known/oauth-authorization-server is documented');
  assert.deepEqual(get.security, [], 'it needs no credential');
  assert.ok(get.responses['200'].content['application/json'].schema.properties.issuer);
});
