import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Keeps the README's walkthrough (examples/quickstart.mjs) true.
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('the README quickstart runs end to end and ends with a 401', async () => {
  const child = spawn(process.execPath, ['examples/quickstart.mjs'], { env: { ...process.env, SKYPORT_URL: server.url } });
  let out = '';
  child.stdout.on('data', (d) => { out += String(d); });
  child.stderr.on('data', (d) => { out += String(d); });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, out);
  assert.match(out, /logged in as you-\d+@example\.com/);
  assert.match(out, /client my-back-end-\d+ created/);
  assert.match(out, /client_credentials token expires in 7776000 s/);
  assert.match(out, /after revoking: 401 invalid_token/);
});
