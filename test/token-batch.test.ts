import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { basic, raw } from './helpers/http.js';

/**
 * Tokens requested at the same moment share one statement with their audit events
 * (tokens.repository.ts). Whatever shares a batch, every token, refresh token and event is
 * stored, and each belongs to the right account.
 */

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('concurrent client_credentials tokens of users and products: all stored, all audited, all usable', async () => {
  const a = await signUp(server.url);
  const b = await signUp(server.url);
  const client = async (token: string, path = '/v1/clients') => {
    const r = await raw(`${server.url}${path}`, { method: 'POST', token, json: { name: 'batch', type: 'installed' } });
    assert.equal(r.status, 201, r.text);
    return r.json.client as { id: string; secret: string };
  };
  const ca = await client(a.token);
  const cb = await client(b.token);
  const product = await newProduct(server.url, a.token);
  const cp = await client(a.token, `/v1/products/${product.id}/clients`);

  const mint = (c: { id: string; secret: string }) => raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(c.id, c.secret) } });
  const order = Array.from({ length: 60 }, (_, i) => [ca, cb, cp][i % 3] as { id: string; secret: string });
  const answers = await Promise.all(order.map(mint));
  for (const r of answers) assert.equal(r.status, 200, r.text);
  assert.equal(new Set(answers.map((r) => r.json.access_token)).size, 60);

  // Each token acts for its client's owner.
  const who = await Promise.all(answers.map((r, i) => (order[i] === cp
    ? raw(`${server.url}/v1/products/${product.id}`, { token: r.json.access_token })
    : raw(`${server.url}/v1/user`, { token: r.json.access_token }))));
  who.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    if (order[i] === ca) assert.equal(r.json.username, a.username);
    if (order[i] === cb) assert.equal(r.json.username, b.username);
  });
  // Product tokens came with refresh tokens that work.
  const refreshed = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'refresh_token', refresh_token: answers[2]?.json.refresh_token }, headers: { authorization: basic(cp.id, cp.secret) } });
  assert.equal(refreshed.status, 200, refreshed.text);

  // Twenty token.created events for each user (identical ones of a batch fold into one with a count).
  for (const user of [a, b]) {
    const r = await raw(`${server.url}/v1/user/security_events?per_page=1000`, { token: user.token });
    assert.equal(r.status, 200, r.text);
    const created = (r.json.events as Array<{ type: string; details: { count?: number; client_id: string; grant: string } }>).filter((e) => e.type === 'token.created' && e.details.grant === 'client_credentials');
    assert.equal(created.reduce((n, e) => n + (e.details.count ?? 1), 0), 20, JSON.stringify(created));
    assert.ok(created.every((e) => e.details.client_id === (user === a ? ca.id : cb.id)));
  }
});
