import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';

let server: TestServer;
// Built as a server builds it, every schema compiled at the start: a schema that cannot be
// compiled fails here, though no test calls its route.
before(async () => { server = await startTestServer({ compileSchemas: 'at-start' }); });
after(async () => { await server.close(); });

test('GET /v1/openapi.json answers an OpenAPI 3 document of the API', async () => {
  const r = await raw(`${server.url}/v1/openapi.json`);
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  const doc = r.json as { openapi: string; info: { title: string; version: string }; paths: Record<string, Record<string, unknown>>; components?: { securitySchemes?: Record<string, unknown> } };
  assert.match(doc.openapi, /^3\.\d+\.\d+$/);
  assert.equal(typeof doc.info.title, 'string');
  assert.equal(typeof doc.info.version, 'string');
  const expected: Array<[string, string[]]> = [
    ['/oauth/token', ['post']],
    ['/v1/users', ['post']],
    ['/v1/user', ['get', 'put', 'delete']],
    ['/v1/clients', ['get', 'post']],
    ['/v1/access_tokens/current', ['get', 'delete']],
    ['/v1/webhooks', ['get', 'post']],
    ['/v1/integrations/{id}', ['get', 'put', 'delete']],
    ['/v1/products/{productIdOrSlug}/webhooks/{id}/deliveries', ['get']],
  ];
  for (const [path, methods] of expected) {
    const item = doc.paths[path];
    assert.ok(item, `the document lists ${path}`);
    for (const m of methods) assert.ok(item[m], `the document lists ${m.toUpperCase()} ${path}`);
  }
  assert.equal(doc.paths['/v1/openapi.json'], undefined, 'the document does not list itself');
  const token = doc.paths['/oauth/token']?.post as { requestBody?: { content?: Record<string, unknown> }; responses?: Record<string, unknown> };
  assert.ok(token.requestBody?.content?.['application/x-www-form-urlencoded'], '/oauth/token takes form encoding');
  assert.ok(token.responses?.['200'] && token.responses['400'], '/oauth/token documents its success and error answers');
  assert.ok(doc.components?.securitySchemes?.bearer, 'the bearer scheme is declared');
  // A webhook's answers list every field: Fastify serializes with them, and the document shows them.
  const created = (doc.paths['/v1/webhooks']?.post as { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, unknown> } }> }> }).responses['201'];
  const fields = Object.keys(created?.content['application/json']?.schema.properties ?? {});
  for (const f of ['ok', 'id', 'event', 'url', 'requestType', 'name', 'created_at', 'hookUrl', 'secret', 'disabled', 'disabled_reason']) assert.ok(fields.includes(f), `POST /v1/webhooks answers ${f}`);
  assert.ok(!fields.includes('password'), 'never a password');
});
