import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { PASSWORD, signUp } from '../helpers/fixtures.js';
import { launch, newPage } from '../helpers/browser.js';

/**
 * CORS for customers' browser apps: particle-api-js's browser bundle, in a page of another
 * origin, calls the API of a Skyport that lists that origin in CORS_ORIGINS; a page of an origin
 * not listed cannot read the answers.
 */
// The package exports its Node entry only; its browser bundle sits in dist/ beside lib/.
const API_JS = createRequire(import.meta.url).resolve('particle-api-js');
const BUNDLE = readFileSync(join(API_JS.slice(0, API_JS.lastIndexOf('/lib/')), 'dist', 'particle.min.js'));
const PAGE = '<!doctype html><html lang="en"><head><title>A customer app</title><script src="/particle.min.js"></script></head><body></body></html>';

/** A customer's web app: its own origin, serving a page and particle-api-js. */
async function appOrigin(): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url === '/particle.min.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(BUNDLE);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

let listed: { origin: string; server: Server };
let other: { origin: string; server: Server };
let skyport: TestServer;
let plain: TestServer;
let browser: Browser;
before(async () => {
  [listed, other] = await Promise.all([appOrigin(), appOrigin()]);
  [skyport, plain, browser] = await Promise.all([
    startTestServer({ env: { CORS_ORIGINS: `https://elsewhere.example.com,${listed.origin}` } }),
    startTestServer(),
    launch(),
  ]);
});
after(async () => {
  await browser.close();
  await Promise.all([skyport.close(), plain.close()]);
  listed.server.close();
  other.server.close();
});

test('a preflight from a listed origin is answered with what it may send; any other origin gets no CORS header', async () => {
  const preflight = (url: string, origin: string) => raw(`${url}/v1/devices`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
  });
  const ok = await preflight(skyport.url, listed.origin);
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get('access-control-allow-origin'), listed.origin);
  assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');
  assert.match(ok.headers.get('access-control-allow-headers') ?? '', /Authorization/i);
  assert.match(ok.headers.get('access-control-allow-methods') ?? '', /PUT/);
  assert.match(ok.headers.get('vary') ?? '', /Origin/i);
  assert.equal(ok.headers.get('x-content-type-options'), 'nosniff', 'a preflight is an answer too');

  for (const [url, origin] of [[skyport.url, other.origin], [skyport.url, 'null'], [plain.url, listed.origin]] as const) {
    const refused = await preflight(url, origin);
    assert.equal(refused.headers.get('access-control-allow-origin'), null, `${origin} at ${url}`);
    assert.equal(refused.headers.get('access-control-allow-credentials'), null, `${origin} at ${url}`);
  }
  assert.equal((await raw(`${plain.url}/v1/user`, { headers: { origin: listed.origin } })).headers.get('vary'), null, 'with no origin listed, nothing varies by Origin');

  // A simple request: the answer carries the header for a listed origin only, errors included.
  const { token } = await signUp(skyport.url);
  const mine = await raw(`${skyport.url}/v1/user`, { token, headers: { origin: listed.origin } });
  assert.equal(mine.headers.get('access-control-allow-origin'), listed.origin);
  assert.match(mine.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/i);
  // The API's answers carry nosniff, and none of the console's headers (docs/security.md).
  assert.equal(mine.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(mine.headers.get('cross-origin-resource-policy'), null);
  assert.equal(mine.headers.get('content-security-policy'), null);
  const denied = await raw(`${skyport.url}/v1/user`, { headers: { origin: listed.origin } });
  assert.equal(denied.status, 400, 'no token: the request is refused');
  assert.equal(denied.headers.get('access-control-allow-origin'), listed.origin, 'the app can read why it was refused');
  assert.equal((await raw(`${skyport.url}/v1/user`, { token, headers: { origin: other.origin } })).headers.get('access-control-allow-origin'), null);
  // A preflight without a method to ask about is not a preflight: a clear 400, not a 500.
  const bare = await raw(`${skyport.url}/v1/devices`, { method: 'OPTIONS', headers: { origin: listed.origin } });
  assert.equal(bare.status, 400);
});

/** Runs particle-api-js in a page of `origin`: logs in and lists the user's devices. */
async function fromPage(origin: string, apiUrl: string, username: string): Promise<string> {
  const page = await newPage(browser, origin);
  try {
    await page.goto('/');
    return await page.evaluate(async ([baseUrl, user, password]) => {
      const P = (globalThis as unknown as { Particle: new (o: { baseUrl: string }) => { login(a: object): Promise<{ body: { access_token: string } }>; listDevices(a: object): Promise<{ body: unknown[] }> } }).Particle;
      const particle = new P({ baseUrl });
      try {
        const login = await particle.login({ username: user, password });
        const auth = login.body.access_token;
        const devices = await particle.listDevices({ auth });
        // The event stream is read across origins too: its first line is ":ok".
        const stream = await fetch(`${baseUrl}/v1/devices/events`, { headers: { authorization: `Bearer ${auth}` } });
        const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
        const first = new TextDecoder().decode((await reader.read()).value);
        await reader.cancel();
        return `ok: ${devices.body.length} devices, stream ${first.trim()}`;
      } catch (err) {
        return `failed: ${String((err as { message?: string }).message ?? err)}`;
      }
    }, [apiUrl, username, PASSWORD] as const);
  } finally {
    await page.context().close();
  }
}

test('particle-api-js in a page of a listed origin logs in, lists devices and opens the event stream', async () => {
  const { username } = await signUp(skyport.url);
  assert.equal(await fromPage(listed.origin, skyport.url, username), 'ok: 0 devices, stream :ok');
});

test('a page of an origin not listed cannot read the API', async () => {
  const { username } = await signUp(skyport.url);
  assert.match(await fromPage(other.origin, skyport.url, username), /^failed/);
  const { username: u2 } = await signUp(plain.url);
  assert.match(await fromPage(listed.origin, plain.url, u2), /^failed/, 'no origin is listed by default');
});
