import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('sign up, log in with particle-api-js, read the account', async () => {
  const api = particle(server.url);
  const username = email();
  await api.createUser({ username, password: 'correct horse' });
  const login = await api.login({ username, password: 'correct horse' });
  assert.equal(login.statusCode, 200);
  const me = await api.getUserInfo({ auth: login.body.access_token });
  assert.equal(me.body.username, username);
});
