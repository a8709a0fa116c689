import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';

let server: TestServer;
before(async () => { server = await startTestServer(); });
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
});
