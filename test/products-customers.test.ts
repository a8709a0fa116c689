import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { basic, raw } from './helpers/http.js';
import { newProduct as createProduct, signUp } from './helpers/fixtures.js';

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

const userToken = (_api?: unknown) => signUp(server.url);
const newProduct = (token: string, name?: string) => createProduct(server.url, token, name);

test('products: create as particle-cli sends it, list, read by id and by slug', async () => {
  const api = particle(server.url);
  const { token, username } = await userToken(api);
  const product = await newProduct(token);
  assert.match(product.slug, /^tracker-fleet-v/);
  const list = await api.listProducts({ auth: token });
  assert.deepEqual(list.body.products.map((p: { id: number }) => p.id), [product.id]);
  const byId = await api.getProduct({ product: product.id, auth: token });
  const bySlug = await api.getProduct({ product: product.slug, auth: token });
  assert.equal(byId.body.product.slug, product.slug);
  assert.equal(bySlug.body.product.id, product.id);
  assert.equal(bySlug.body.product.user, username);
  assert.equal(bySlug.body.product.platform_id, 26);

  // Another account learns nothing: unknown and foreign products answer alike.
  const other = await userToken(api);
  const foreign = await raw(`${server.url}/v1/products/${product.id}`, { token: other.token });
  const unknown = await raw(`${server.url}/v1/products/999999`, { token: other.token });
  assert.equal(foreign.status, 403);
  assert.deepEqual(foreign.json, unknown.json);
  assert.equal(foreign.json.error, 'Permission Denied');
});

test('team: invite by username, list, remove; members manage the product, others cannot', async () => {
  const api = particle(server.url);
  const owner = await userToken(api);
  const mate = await userToken(api);
  const product = await newProduct(owner.token);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/team`, { token: mate.token })).status, 403);
  await api.inviteTeamMember({ username: mate.username, product: product.id, auth: owner.token });
  const team = await api.listTeamMembers({ product: product.slug, auth: mate.token });
  assert.deepEqual(team.body.team.map((m: { username: string }) => m.username).sort(), [owner.username, mate.username].sort());
  await api.removeTeamMember({ username: mate.username, product: product.id, auth: owner.token });
  assert.equal((await raw(`${server.url}/v1/products/${product.id}`, { token: mate.token })).status, 403);
  // The last member cannot leave.
  const last = await raw(`${server.url}/v1/products/${product.id}/team/${encodeURIComponent(owner.username)}`, { method: 'DELETE', token: owner.token });
  assert.equal(last.status, 409);
  const unknown = await raw(`${server.url}/v1/products/${product.id}/team`, { method: 'POST', token: owner.token, json: { username: email('nobody') } });
  assert.equal(unknown.status, 404);
});

test('product clients: a two-legged client gets a product token that manages its own product only', async () => {
  const api = particle(server.url);
  const owner = await userToken(api);
  const product = await newProduct(owner.token);
  const other = await newProduct(owner.token, 'Other');
  const created = await api.createOAuthClient({ name: 'backend', type: 'installed', product: product.id, auth: owner.token });
  const client = created.body.client;
  assert.equal(client.product_id, product.id);
  assert.ok(client.secret);
  const listed = await api.listOAuthClients({ product: product.slug, auth: owner.token });
  assert.deepEqual(listed.body.clients.map((c: { id: string }) => c.id), [client.id]);
  assert.equal(listed.body.clients[0].secret, undefined);
  // Not listed among the user's own clients.
  assert.deepEqual((await api.listOAuthClients({ auth: owner.token })).body.clients, []);

  const cc = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'client_credentials' } });
  assert.equal(cc.status, 200, cc.text);
  assert.ok(cc.json.refresh_token, 'product tokens come with a refresh token');
  const productToken = cc.json.access_token as string;
  assert.equal((await raw(`${server.url}/v1/products/${product.id}`, { token: productToken })).status, 200);
  assert.equal((await raw(`${server.url}/v1/products/${other.id}`, { token: productToken })).status, 403);
  assert.equal((await raw(`${server.url}/v1/user`, { token: productToken })).status, 403);

  const refreshed = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'refresh_token', refresh_token: cc.json.refresh_token } });
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.notEqual(refreshed.json.refresh_token, cc.json.refresh_token);
  const again = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'refresh_token', refresh_token: cc.json.refresh_token } });
  assert.equal(again.status, 400);
  assert.equal(again.json.error, 'invalid_grant');
});

test('customers: simple auth (mobile client), shadow customers (two-legged), and the web client by ID alone', async () => {
  const api = particle(server.url);
  const owner = await userToken(api);
  const product = await newProduct(owner.token);
  const mobile = (await api.createOAuthClient({ name: 'app', type: 'installed', scope: 'customers:create', product: product.id, auth: owner.token })).body.client;
  const web = (await api.createOAuthClient({ name: 'web', type: 'web', redirect_uri: 'https://example.com/setup', scope: 'customers:create', product: product.id, auth: owner.token })).body.client;
  const server2 = (await api.createOAuthClient({ name: 'server', type: 'installed', product: product.id, auth: owner.token })).body.client;

  // Simple authentication, with particle-api-js createCustomer (credentials in the form body).
  const app = particle(server.url, { clientId: mobile.id, clientSecret: mobile.secret });
  const customerEmail = email('customer');
  const made = await app.createCustomer({ email: customerEmail, password: 'customer pass', product: product.id });
  assert.equal(made.statusCode, 201);
  assert.equal(made.body.token_type, 'bearer');
  assert.ok(made.body.refresh_token);
  // The customer logs in with the product's client and the password grant.
  const login = await app.login({ username: customerEmail, password: 'customer pass' });
  assert.ok(login.body.access_token);
  assert.notEqual(login.body.access_token, made.body.access_token);
  // Customers never reach console routes.
  assert.equal((await raw(`${server.url}/v1/products/${product.id}`, { token: login.body.access_token })).status, 403);
  assert.equal((await raw(`${server.url}/v1/user`, { token: login.body.access_token })).status, 403);
  // The same e-mail in another case is taken.
  const dup = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(mobile.id, mobile.secret) }, form: { email: customerEmail.toUpperCase(), password: 'another pass' } });
  assert.equal(dup.status, 409);
  // Client credentials win over a Bearer header sent with them (a client library's default auth): the answer is still a token.
  const both = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(mobile.id, mobile.secret) }, form: { email: email(), password: 'another pass', access_token: owner.token } });
  assert.equal(both.status, 201, both.text);
  assert.equal(typeof both.json.access_token, 'string');
  // Both or neither of password and no_password: 400.
  const forms: Array<Record<string, string>> = [{ email: email(), password: 'long enough', no_password: 'true' }, { email: email() }];
  for (const form of forms) {
    const r = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(mobile.id, mobile.secret) }, form });
    assert.equal(r.status, 400, JSON.stringify(form));
  }

  // Web client: its ID alone.
  const viaWeb = await raw(`${server.url}/v1/products/${product.slug}/customers`, { method: 'POST', form: { client_id: web.id, email: email('webcust'), password: 'web customer' } });
  assert.equal(viaWeb.status, 201, viaWeb.text);
  // An installed client without its secret is refused.
  const noSecret = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', form: { client_id: mobile.id, email: email(), password: 'long enough' } });
  assert.equal(noSecret.status, 400);

  // Two-legged: a shadow customer, then fresh tokens per login with scope=customer=<email>.
  const shadowEmail = email('shadow');
  const shadow = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(server2.id, server2.secret) }, form: { email: shadowEmail, no_password: 'true' } });
  assert.equal(shadow.status, 201, shadow.text);
  const t1 = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(server2.id, server2.secret) }, form: { grant_type: 'client_credentials', scope: `customer=${shadowEmail}` } });
  assert.equal(t1.status, 200, t1.text);
  assert.equal(t1.json.scope, `customer=${shadowEmail}`);
  assert.ok(t1.json.refresh_token);
  // A customers:create client may not mint customer tokens; a shadow customer has no password.
  const narrow = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(mobile.id, mobile.secret) }, form: { grant_type: 'client_credentials', scope: `customer=${shadowEmail}` } });
  assert.equal(narrow.status, 400);
  const shadowLogin = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(mobile.id, mobile.secret) }, form: { grant_type: 'password', username: shadowEmail, password: 'anything at all' } });
  assert.equal(shadowLogin.status, 400);
  assert.equal(shadowLogin.json.error, 'invalid_grant');

  // The team lists customers, changes a password, deletes a customer (its tokens die).
  const list = await raw(`${server.url}/v1/products/${product.id}/customers?per_page=2`, { token: owner.token });
  assert.equal(list.status, 200);
  assert.equal(list.json.meta.total, 4);
  assert.equal(list.json.customers.length, 2);
  const reset = await raw(`${server.url}/v1/products/${product.id}/customers/${encodeURIComponent(customerEmail)}`, { method: 'PUT', token: owner.token, json: { password: 'a new password' } });
  assert.equal(reset.status, 200);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: login.body.access_token })).status, 401);
  const del = await raw(`${server.url}/v1/products/${product.id}/customers/${encodeURIComponent(shadowEmail)}`, { method: 'DELETE', token: owner.token });
  assert.equal(del.status, 204);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: t1.json.access_token })).status, 401);
  const gone = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(server2.id, server2.secret) }, form: { grant_type: 'client_credentials', scope: `customer=${shadowEmail}` } });
  assert.equal(gone.status, 400);

  // A product with customers is deleted only with confirm=<slug>.
  assert.equal((await raw(`${server.url}/v1/products/${product.id}`, { method: 'DELETE', token: owner.token })).status, 409);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}?confirm=${product.slug}`, { method: 'DELETE', token: owner.token })).status, 204);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: made.body.access_token })).status, 401);
});

test('a customer logged in through a customers:create client gets a token that reaches its devices', async () => {
  const api = particle(server.url);
  const owner = await userToken(api);
  const product = await newProduct(owner.token);
  const mobile = (await api.createOAuthClient({ name: 'app', scope: 'customers:create', product: product.id, auth: owner.token })).body.client;
  const app = particle(server.url, { clientId: mobile.id, clientSecret: mobile.secret });
  const customerEmail = email('simple');
  await app.createCustomer({ email: customerEmail, password: 'customer pass', product: product.id });
  const login = await app.login({ username: customerEmail, password: 'customer pass' });
  assert.equal(login.body.scope, undefined, 'a full-scope customer token');
  const devices = await raw(`${server.url}/v1/devices`, { token: login.body.access_token });
  assert.equal(devices.status, 200, devices.text);
  const code = await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: login.body.access_token, json: {} });
  assert.equal(code.status, 200, code.text);
});

test("customers created with a team member's token: the record, no token; bad inputs; non-members get the team routes' 403", async () => {
  const owner = await userToken();
  const product = await newProduct(owner.token, 'Team Customers');
  const url = `${server.url}/v1/products/${product.slug}/customers`;
  const withPassword = email('teamcust');
  const made = await raw(url, { method: 'POST', token: owner.token, json: { email: withPassword, password: 'customer pass' } });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.json.customer.username, withPassword);
  assert.equal(made.json.customer.shadow, false);
  assert.deepEqual(made.json.customer.devices, []);
  assert.equal(made.json.access_token, undefined, 'the team member is not handed a customer token');
  // The customer logs in itself, with the product's client and the password grant.
  const mobile = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'app', scope: 'customers:create' } });
  const login = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(mobile.json.client.id, mobile.json.client.secret) }, form: { grant_type: 'password', username: withPassword, password: 'customer pass' } });
  assert.equal(login.status, 200, login.text);

  const shadow = await raw(url, { method: 'POST', token: owner.token, form: { email: email('teamshadow'), no_password: 'true' } });
  assert.equal(shadow.status, 201, shadow.text);
  assert.equal(shadow.json.customer.shadow, true);

  // The product's own tokens may too: full scope, and customers:create.
  const twoLegged = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'server' } });
  for (const client of [twoLegged.json.client, mobile.json.client]) {
    const t = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'client_credentials' } });
    const r = await raw(url, { method: 'POST', token: t.json.access_token, json: { email: email('byproduct'), no_password: true } });
    assert.equal(r.status, 201, `${client.name}: ${r.text}`);
  }

  // Bad inputs: clear JSON errors, never a 500.
  const bad: Array<[Record<string, unknown>, number, string]> = [
    [{ email: withPassword.toUpperCase(), password: 'another pass' }, 409, 'conflict'],
    [{ email: email(), password: 'long enough', no_password: true }, 400, 'invalid_request'],
    [{ email: email() }, 400, 'invalid_request'],
    [{ email: 'not an e-mail', no_password: true }, 400, 'invalid_request'],
    [{ email: email(), password: 'short' }, 400, 'invalid_request'],
    [{ password: 'long enough' }, 400, 'invalid_request'],
    [{ email: email(), no_password: 'maybe' }, 400, 'invalid_request'],
  ];
  for (const [json, status, error] of bad) {
    const r = await raw(url, { method: 'POST', token: owner.token, json });
    assert.equal(r.status, status, `${JSON.stringify(json)}: ${r.text}`);
    assert.equal(r.json.error, error, JSON.stringify(json));
  }
  const twice = await raw(`${url}?access_token=${owner.token}`, { method: 'POST', token: owner.token, json: { email: email(), no_password: true } });
  assert.equal(twice.status, 400);

  // Anyone else: the same 403 as for the product's other routes, and for a product that does not exist.
  const stranger = await userToken();
  const refused = await raw(url, { method: 'POST', token: stranger.token, json: { email: email(), no_password: true } });
  const otherRoute = await raw(`${server.url}/v1/products/${product.slug}/team`, { token: stranger.token });
  const unknown = await raw(`${server.url}/v1/products/no-such-product/customers`, { method: 'POST', token: stranger.token, json: { email: email(), no_password: true } });
  assert.equal(refused.status, 403);
  assert.deepEqual(refused.json, otherRoute.json);
  assert.deepEqual(unknown.json, refused.json);
  // A customer's token creates no customer; a token that does not exist is a 401.
  const customerToken = login.json.access_token as string;
  assert.equal((await raw(url, { method: 'POST', token: customerToken, json: { email: email(), no_password: true } })).status, 403);
  assert.equal((await raw(url, { method: 'POST', token: 'not-a-token', json: { email: email(), no_password: true } })).status, 401);
  const listed = await raw(`${url}?per_page=100`, { token: owner.token });
  assert.equal(listed.json.meta.total, 4);
});
