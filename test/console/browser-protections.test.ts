import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { raw, type RawResponse } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { configDevice, provision } from '../helpers/device.js';
import { uploaded } from '../helpers/firmware.js';
import { eventually } from '../helpers/eventually.js';
import { consoleUnderTest, newPage, logIn, recordViolations } from '../helpers/browser.js';
import { PASSWORD } from '../helpers/fixtures.js';

/**
 * The console's browser protections (docs/security.md, "The console in the browser"): the headers
 * of every kind of answer, a walk through the console's pages that meets no Content-Security-Policy
 * violation, and a page of another origin that cannot frame the console.
 */
const tested = consoleUnderTest({ env: { METRICS: 'open' } });

const ASSET = readdirSync(new URL('../../dist/console/assets/', import.meta.url)).find((f) => f.endsWith('.js'));

/** The headers only the console's answers carry, and their values. */
function assertConsoleHeaders(r: RawResponse, what: string): void {
  const csp = r.headers.get('content-security-policy') ?? '';
  const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values.join(' ')]));
  assert.equal(directives.get('default-src'), "'none'", `${what}: ${csp}`);
  assert.equal(directives.get('script-src'), "'self'", `${what}: scripts only from the console's origin, none inline, no eval: ${csp}`);
  assert.equal(directives.get('connect-src'), "'self'", `${what}: ${csp}`);
  assert.equal(directives.get('frame-ancestors'), "'none'", `${what}: ${csp}`);
  assert.equal(directives.get('object-src'), "'none'", `${what}: ${csp}`);
  assert.equal(directives.get('base-uri'), "'none'", `${what}: ${csp}`);
  assert.equal(directives.get('form-action'), "'self'", `${what}: ${csp}`);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval') && !csp.includes('upgrade-insecure-requests'), `${what}: ${csp}`);
  assert.equal(r.headers.get('x-frame-options'), 'DENY', what);
  assert.equal(r.headers.get('referrer-policy'), 'no-referrer', what);
  assert.equal(r.headers.get('cross-origin-opener-policy'), 'same-origin', what);
  assert.equal(r.headers.get('cross-origin-resource-policy'), 'same-origin', what);
  assert.equal(r.headers.get('origin-agent-cluster'), '?1', what);
  assert.equal(r.headers.get('strict-transport-security'), null, `${what}: no HSTS (the console may be served over plain HTTP)`);
}

/** What every answer carries: nosniff, and no header of the console's. */
function assertApiHeaders(r: RawResponse, what: string): void {
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff', what);
  for (const name of ['content-security-policy', 'x-frame-options', 'cross-origin-resource-policy', 'cross-origin-opener-policy', 'strict-transport-security']) {
    assert.equal(r.headers.get(name), null, `${what}: ${name}`);
  }
}

test('headers: the console (its document and files) carries its policy; every answer of the API carries nosniff', async () => {
  const { url } = tested.server;
  const page = { accept: 'text/html,application/xhtml+xml' };
  const { token } = await signUp(url);

  // The document is asked for again each time (it names the build's assets); the assets, whose
  // names change with their content, are kept a year.
  const cached = [['/', 'the console at /', 'no-cache'], ['/products/some-fleet/config', 'a page path of the console', 'no-cache'], [`/assets/${ASSET}`, 'a built asset', 'public, max-age=31536000, immutable']] as const;
  for (const [path, what, cacheControl] of cached) {
    const r = await raw(`${url}${path}`, { headers: page });
    assert.equal(r.status, 200, what);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', what);
    assert.equal(r.headers.get('cache-control'), cacheControl, what);
    assertConsoleHeaders(r, what);
  }

  const user = await raw(`${url}/v1/user`, { token });
  assert.equal(user.status, 200);
  assertApiHeaders(user, 'an API JSON answer');
  const refused = await raw(`${url}/v1/user`, { token: 'not-a-token' });
  assert.equal(refused.status, 401);
  assertApiHeaders(refused, 'an error');
  const elsewhere = await raw(`${url}/no/such/page`, { headers: page });
  assert.match(elsewhere.text, /<div id="root">/, 'any other path is a page of the console for a browser');
  assert.equal(elsewhere.headers.get('cache-control'), 'no-cache', 'an unknown page path');
  assertConsoleHeaders(elsewhere, 'an unknown page path');
  const missing = await raw(`${url}/v1/no-such-thing`, { headers: page });
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error, 'not_found', 'an API path keeps its JSON 404, even for a browser');
  assertApiHeaders(missing, 'a 404');
  const badUrl = await raw(`${url}/v1/devices/%E0%A4%A`, { token });
  assert.equal(badUrl.status, 400);
  assertApiHeaders(badUrl, "a path the router refuses (Fastify's own errors)");
  const posted = await raw(`${url}/no/such/page`, { method: 'POST', headers: page, json: {} });
  assert.equal(posted.status, 404);
  assertApiHeaders(posted, 'a 404 of another method');
  for (const path of ['/healthz', '/metrics', '/v1/openapi.json']) {
    const r = await raw(`${url}${path}`);
    assert.equal(r.status, 200, path);
    assertApiHeaders(r, path);
  }

  const stream = await raw(`${url}/v1/devices/events`, { token });
  assert.equal(stream.status, 200);
  assert.equal(stream.text.trim(), ':ok');
  assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
  assertApiHeaders(stream, 'an event stream');
});

describe('in Chromium', { concurrency: true }, () => {
  test('the pages a product team uses meet no Content-Security-Policy violation', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Guarded Fleet');
    const who = await provision(tested.server.url, token, product.id);
    const device = await configDevice(tested.server.mqttUrl, who, new Map());
    try {
      await eventually(async () => ((await raw(`${tested.server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online === true ? true : undefined));
      const page = await newPage(tested.browser, tested.server.url);
      const violations = await recordViolations(page);
      await logIn(page, username, PASSWORD);
      await page.getByRole('heading', { name: 'Products' }).waitFor();
      const visited: string[] = ['products'];
      const check = async (where: string) => {
        visited.push(where);
        assert.deepEqual(await violations(), [], `after ${visited.join(', ')}`);
      };

      // The fleet, live (an event stream), and a device.
      await page.getByRole('link', { name: 'Guarded Fleet' }).click();
      await page.getByRole('heading', { name: 'Devices' }).waitFor();
      await page.getByRole('row', { name: new RegExp(who.id) }).getByText('online').waitFor();
      await check('fleet');
      await page.getByRole('link', { name: who.id }).click();
      await page.getByRole('heading', { name: new RegExp(who.id) }).waitFor();
      await page.getByText('Live: changes show as they happen.').waitFor();
      await check('device');
      await page.getByRole('link', { name: 'Device settings' }).click();
      await page.getByRole('heading', { name: /Settings of device/ }).waitFor();
      await page.getByRole('row', { name: /^RGB LED/ }).waitFor();
      await check('device settings');

      // The configuration form, checked in the page (react-jsonschema-form with the console's
      // validator, which makes no code from the schema) before it is sent; the rollout's bars;
      // history and schema.
      const tab = (name: string) => page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name, exact: true });
      await tab('Configuration').click();
      await page.getByRole('heading', { name: 'Fleet configuration' }).waitFor();
      await page.getByRole('heading', { name: 'Rollout' }).waitFor();
      await page.locator('#root_sleep_exe_min').fill('-5');
      await page.getByRole('button', { name: 'Save' }).click();
      // The check runs at once: its message at the field, or the policy's refusal of a validator
      // that makes code of the schema (Ajv's), which the check below names.
      const fieldError = page.locator('#root_sleep_exe_min__error');
      await eventually(async () => ((await fieldError.count()) > 0 || (await violations()).length > 0 ? true : undefined), 10_000, 'the form to check its values');
      await check('the configuration form checking its values');
      assert.match((await fieldError.textContent()) ?? '', /must be >=/);
      await page.locator('#root_sleep_exe_min').fill('10');
      await page.locator('select#root_rgb_type').selectOption('off');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText(/Saved as version 1/).waitFor();
      await check('configuration');
      await page.getByRole('navigation', { name: 'Configuration' }).getByRole('link', { name: 'History' }).click();
      await page.getByRole('heading', { name: 'Configuration history' }).waitFor();
      await check('history');
      await page.getByRole('navigation', { name: 'Configuration' }).getByRole('link', { name: 'Schema' }).click();
      await page.getByRole('link', { name: 'Download the schema' }).waitFor();
      await check('schema');

      // Firmware (a version, its release form with a group's colour swatch) and groups.
      await uploaded(tested.server.url, token, product.id, 1);
      assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/groups`, { method: 'POST', token, json: { name: 'red', color: '#e74c3c' } })).status, 201);
      await tab('Firmware').click();
      await page.getByRole('button', { name: 'Release version 1' }).click();
      await page.getByRole('checkbox', { name: /Group red/ }).waitFor();
      await check('firmware');
      await tab('Groups').click();
      await page.getByRole('row', { name: /red/ }).waitFor();
      await check('groups');

      // Customers, the product's clients, its team and settings.
      await tab('Customers').click();
      await page.getByText('No customers in this product yet.').waitFor();
      await check('customers');
      await tab('Clients').click();
      await page.getByText('No OAuth clients yet.').waitFor();
      await check('clients');
      await tab('Integrations').click();
      await page.getByText('No webhooks yet.').waitFor();
      await page.getByRole('link', { name: 'New webhook' }).click();
      await page.getByLabel('Event name prefix').fill('guarded');
      await page.getByLabel('URL').fill('https://example.com/hooks');
      await page.getByRole('button', { name: 'Preview the request' }).click();
      await page.getByRole('region', { name: 'Request preview' }).waitFor();
      await check('integrations');
      await tab('Team').click();
      await page.getByRole('heading', { name: 'Team', exact: true }).waitFor();
      await check('team');
      await tab('Settings').click();
      await page.getByRole('form', { name: 'Product settings' }).waitFor();
      await check('settings');

      // The account's own clients, and the account with its two-step verification's QR code.
      await page.getByRole('link', { name: 'OAuth clients' }).click();
      await page.getByRole('heading', { name: 'Your clients' }).waitFor();
      await check('OAuth clients');
      await page.locator('header').getByRole('link', { name: 'Account' }).click();
      await page.getByRole('button', { name: 'Turn on two-step verification' }).click();
      await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
      await check('account');
      await page.getByRole('button', { name: 'API token' }).click();
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByLabel('Your token').waitFor();
      await check('API token');

      // And the policy is in force, and heard: a script written into the page does not run.
      await page.evaluate(`document.head.append(Object.assign(document.createElement('script'), { textContent: 'globalThis.injected = true' }))`);
      const heard = await eventually(async () => ((await violations()).length >= 2 ? violations() : undefined), 5000, 'the refused script to be reported');
      assert.ok(heard.some((v) => v.startsWith('script-src-elem blocked inline')), `the page's event: ${heard.join('; ')}`);
      assert.ok(heard.some((v) => /^Executing inline script violates the following Content Security Policy/.test(v)), `the console's error: ${heard.join('; ')}`);
      assert.equal(await page.evaluate('globalThis.injected'), undefined);
      await page.context().close();
    } finally {
      device.client.end(true);
    }
  });

  test('a page of another origin cannot frame the console', async () => {
    const framing = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html lang="en"><head><title>Another site</title></head><body><iframe title="console" src="${tested.server.url}/"></iframe></body></html>`);
    });
    await new Promise<void>((resolve) => framing.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://localhost:${(framing.address() as AddressInfo).port}`;
      const page = await newPage(tested.browser, origin);
      // The console answered the frame's request, with the headers that refuse it.
      const answered = page.waitForResponse((r) => r.url() === `${tested.server.url}/`);
      await page.goto('/');
      assert.equal((await answered).status(), 200);
      // Chromium replaces a refused frame's document with an empty error page of an opaque
      // origin: no console in it, whatever time it is given.
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, 'the iframe is there');
      await eventually(async () => (await frame.evaluate('document.readyState') === 'complete' ? true : undefined));
      assert.equal(await frame.locator('#root').count(), 0, 'the console did not load in the frame');
      assert.equal(await frame.getByRole('heading', { name: 'Log in' }).count(), 0);
      assert.notEqual(frame.url(), `${tested.server.url}/`, 'the frame holds an error page, not the console');
      await page.context().close();
    } finally {
      framing.close();
    }
  });
});
