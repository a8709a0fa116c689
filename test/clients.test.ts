import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { raw } from './helpers/http.js';
import { PASSWORD, rejection, signUp } from './helpers/fixtures.js';

// A user's OAuth clients through particle-api-js (docs/particle-compatibility.md#oauth-clients).

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

const account = () => signUp(server.url);

const clientCredentials = (id: string, secret: string) => raw(`${server.url}/oauth/token`, {
  method: 'POST',
  form: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
});

test('createOAuthClient answers the client with its secret, once; listOAuthClients shows no secrets', async () => {
  const { api, token } = await account();
  const created = await api.createOAuthClient({ name: 'My Back End', type: 'installed', auth: token });
  assert.equal(created.statusCode, 201);
  assert.equal(created.body.ok, true);
  const c = created.body.client;
  assert.deepEqual(Object.keys(c).sort(), ['id', 'name', 'scope', 'secret', 'type']);
  assert.match(c.id, /^my-back-end-\d{4,}$/);
  assert.match(c.id, /^[a-z0-9-_]{3,40}$/i);
  assert.match(c.secret, /^[0-9a-f]{40}$/);
  assert.deepEqual([c.name, c.type, c.scope], ['My Back End', 'installed', null]);

  const defaulted = (await api.createOAuthClient({ name: 'second', auth: token })).body.client;
  assert.equal(defaulted.type, 'installed', 'type defaults to installed');

  const listed = await api.listOAuthClients({ auth: token });
  assert.equal(listed.statusCode, 200);
  assert.deepEqual(listed.body, {
    ok: true,
    clients: [
      { id: c.id, name: 'My Back End', type: 'installed', scope: null },
      { id: defaulted.id, name: 'second', type: 'installed', scope: null },
    ],
  });
  assert.ok(!JSON.stringify(listed.body).includes(c.secret));
});

test('a web client needs a redirect_uri; an unknown type or scope is 400', async () => {
  const { api, token } = await account();
  const noRedirect = await rejection(api.createOAuthClient({ name: 'web app', type: 'web', auth: token }));
  assert.deepEqual([noRedirect.statusCode, noRedirect.body.error], [400, 'invalid_request']);
  assert.match(String(noRedirect.body.error_description), /redirect_uri/);
  const notHttp = await rejection(api.createOAuthClient({ name: 'web app', type: 'web', redirect_uri: 'ftp://example.com/cb', auth: token }));
  assert.equal(notHttp.statusCode, 400);

  const web = (await api.createOAuthClient({ name: 'web app', type: 'web', redirect_uri: 'https://app.example.com/callback', scope: 'customers:create', auth: token })).body.client;
  assert.deepEqual([web.type, web.redirect_uri, web.scope], ['web', 'https://app.example.com/callback', 'customers:create']);

  const badType = await rejection(api.createOAuthClient({ name: 'x', type: 'android', auth: token }));
  assert.equal(badType.statusCode, 400);
  const badScope = await rejection(api.createOAuthClient({ name: 'x', scope: 'devices:read', auth: token }));
  assert.equal(badScope.statusCode, 400);
  const listed = (await api.listOAuthClients({ auth: token })).body.clients;
  assert.deepEqual(listed.map((x: { id: string }) => x.id), [web.id], 'refused requests create nothing');
});

test('the customers:create scope is kept and given to the tokens of the client', async () => {
  const { api, token } = await account();
  const c = (await api.createOAuthClient({ name: 'signup app', scope: 'customers:create', auth: token })).body.client;
  assert.equal(c.scope, 'customers:create');
  assert.equal((await api.listOAuthClients({ auth: token })).body.clients[0].scope, 'customers:create');

  const t = await clientCredentials(c.id, c.secret);
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.scope, 'customers:create');
  const current = await raw(`${server.url}/v1/access_tokens/current`, { token: t.json.access_token });
  assert.deepEqual(current.json.scopes, ['customers:create']);
  const denied = await raw(`${server.url}/v1/user`, { token: t.json.access_token });
  assert.deepEqual([denied.status, denied.json.error], [403, 'insufficient_scope']);
});

test('updateOAuthClient renames and rescopes; new tokens follow the new scope at once', async () => {
  const { api, token } = await account();
  const c = (await api.createOAuthClient({ name: 'before', auth: token })).body.client;
  const renamed = await api.updateOAuthClient({ clientId: c.id, name: 'after', auth: token });
  assert.equal(renamed.statusCode, 200);
  assert.deepEqual(renamed.body, { ok: true, client: { id: c.id, name: 'after', type: 'installed', scope: null } });

  // Full scope first (warms the client cache), then narrowed.
  assert.equal((await clientCredentials(c.id, c.secret)).json.scope, undefined);
  const narrowed = await api.updateOAuthClient({ clientId: c.id, scope: 'customers:create', auth: token });
  assert.deepEqual([narrowed.body.client.name, narrowed.body.client.scope], ['after', 'customers:create']);
  assert.equal((await clientCredentials(c.id, c.secret)).json.scope, 'customers:create');
  const widened = await api.updateOAuthClient({ clientId: c.id, scope: null, auth: token });
  assert.equal(widened.body.client.scope, null);
  assert.equal((await clientCredentials(c.id, c.secret)).json.scope, undefined);

  const unknown = await rejection(api.updateOAuthClient({ clientId: 'no-such-client-1234', name: 'x', auth: token }));
  assert.deepEqual([unknown.statusCode, unknown.body.error], [404, 'not_found']);
  const badScope = await rejection(api.updateOAuthClient({ clientId: c.id, scope: 'everything', auth: token }));
  assert.equal(badScope.statusCode, 400);
});

test('deleteOAuthClient answers 204 and revokes every token the client made', async () => {
  const { api, username, token } = await account();
  const c = (await api.createOAuthClient({ name: 'doomed', auth: token })).body.client;
  const keep = (await api.createOAuthClient({ name: 'kept', auth: token })).body.client;
  const viaCc = (await clientCredentials(c.id, c.secret)).json.access_token as string;
  const viaPassword = (await particle(server.url, { clientId: c.id, clientSecret: c.secret }).login({ username, password: PASSWORD })).body.access_token as string;
  const viaOther = (await clientCredentials(keep.id, keep.secret)).json.access_token as string;

  const del = await api.deleteOAuthClient({ clientId: c.id, auth: token });
  assert.equal(del.statusCode, 204);
  assert.deepEqual(del.body, {});
  for (const t of [viaCc, viaPassword]) {
    const r = await raw(`${server.url}/v1/user`, { token: t });
    assert.deepEqual([r.status, r.json.error], [401, 'invalid_token']);
  }
  assert.equal((await raw(`${server.url}/v1/user`, { token: viaOther })).status, 200, "another client's tokens stay");
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 200, "the owner's own login stays");

  const after = await clientCredentials(c.id, c.secret);
  assert.deepEqual([after.status, after.json.error], [400, 'invalid_client']);
  assert.deepEqual((await api.listOAuthClients({ auth: token })).body.clients.map((x: { id: string }) => x.id), [keep.id]);
  const twice = await rejection(api.deleteOAuthClient({ clientId: c.id, auth: token }));
  assert.deepEqual([twice.statusCode, twice.body.error], [404, 'not_found']);
});

test("another user can neither see, update nor delete a client: 404", async () => {
  const owner = await account();
  const stranger = await account();
  const c = (await owner.api.createOAuthClient({ name: 'private', auth: owner.token })).body.client;

  assert.deepEqual((await stranger.api.listOAuthClients({ auth: stranger.token })).body.clients, []);
  const update = await rejection(stranger.api.updateOAuthClient({ clientId: c.id, name: 'mine now', auth: stranger.token }));
  assert.deepEqual([update.statusCode, update.body.error], [404, 'not_found']);
  const del = await rejection(stranger.api.deleteOAuthClient({ clientId: c.id, auth: stranger.token }));
  assert.deepEqual([del.statusCode, del.body.error], [404, 'not_found']);

  assert.deepEqual((await owner.api.listOAuthClients({ auth: owner.token })).body.clients, [{ id: c.id, name: 'private', type: 'installed', scope: null }]);
  assert.equal((await clientCredentials(c.id, c.secret)).status, 200, 'the client still works');
  // Its tokens act for its owner, never for the stranger.
  const t = (await clientCredentials(c.id, c.secret)).json.access_token;
  assert.equal((await raw(`${server.url}/v1/user`, { token: t })).json.username, owner.username);
});
