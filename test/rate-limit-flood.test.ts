import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { signUp } from './helpers/fixtures.js';

/**
 * A client flooding the API (docs/security.md, "Limits on request volume"): one address sends far
 * more than RATE_LIMIT_REQUESTS while another keeps using the API; the flooder gets exactly its
 * budget and then 429s, and the other address never sees a refusal. Functional only: how long
 * the other address waits under a flood is measured by `npm run bench` (docs/benchmarks.md).
 */
let server: TestServer;
before(async () => { server = await startTestServer({ env: { RATE_LIMIT_REQUESTS: '50' } }); });
after(async () => { await server.close(); });

test("one address floods far over its limit while another's requests all succeed", async () => {
  const { token } = await signUp(server.url);
  const read = (from: string) => raw(`${server.url}/v1/user`, { token, from });
  const flood: Array<Promise<number>> = [];
  const others: Array<Promise<number>> = [];
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 25; i++) flood.push(read('203.0.113.66').then((r) => r.status));
    others.push(read('198.51.100.66').then((r) => r.status));
    others.push(read('198.51.100.66').then((r) => r.status));
    await Promise.all(flood.slice(-25));
  }
  const flooded = await Promise.all(flood);
  assert.equal(flooded.filter((s) => s === 200).length, 50, 'the flooder gets its budget, exactly');
  assert.equal(flooded.filter((s) => s === 429).length, flooded.length - 50, 'and 429 for the rest');
  assert.deepEqual(await Promise.all(others), others.map(() => 200), 'the other address is never refused');
});
