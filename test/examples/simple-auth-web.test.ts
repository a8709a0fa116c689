import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Browser, Page, Request } from 'playwright-core';
import { createDevice } from '../../src/sdk/index.js';
import { createProductClient, ownerProduct, ownerToken, provisionDevices } from '../../examples/shared/owner.js';
import { email, startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { launch, seriousA11yViolations } from '../helpers/browser.js';
import { WEB_EXAMPLE } from '../helpers/web-example.js';

/**
 * examples/simple-auth-web in Chromium, as a person uses it: the page, served by its own
 * serve.mjs from another origin than Skyport's, creates a customer with the web client's ID
 * alone, sets up a simulated device in listening mode over the device's SoftAP HTTP protocol
 * (a wrong Wi-Fi password first, then the right one), waits until the device is online and the
 * customer's, and calls its function. What the page shows is checked against the device itself
 * and against the API.
 */
let pages: ChildProcess;
let pageUrl: string;
let skyport: TestServer;
let browser: Browser;

/** `node serve.mjs --port 0`, as the README says to run it; resolves to the URL it prints. */
async function startPageServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(WEB_EXAMPLE, 'serve.mjs'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const [first] = await Promise.race([
    once(lines, 'line') as Promise<[string]>,
    once(child, 'exit').then(([code]) => { throw new Error(`serve.mjs exited (${String(code)}) before printing its URL`); }),
  ]);
  return { child, url: first.trim() };
}

before(async () => {
  ({ child: pages, url: pageUrl } = await startPageServer());
  // The page's origin is the one Skyport lets call it from a browser (CORS_ORIGINS).
  [skyport, browser] = await Promise.all([startTestServer({ env: { CORS_ORIGINS: new URL(pageUrl).origin } }), launch()]);
});
after(async () => {
  await browser?.close();
  await skyport?.close();
  pages?.kill();
});

const status = (page: Page, name: string) => page.getByRole('status', { name });
/** Waits until the live region `name` says `text`; on a timeout, the failure shows what it said instead. */
async function sees(page: Page, name: string, text: RegExp, timeout = 10_000): Promise<void> {
  try {
    await status(page, name).filter({ hasText: text }).waitFor({ timeout });
  } catch {
    assert.fail(`"${name}" never said ${text}; it says: "${await status(page, name).textContent()}"`);
  }
}

test('a person creates an account, sets the lamp up on Wi-Fi (a wrong password first, then the right one) and turns it on', async () => {
  // The product's owner, once: a product, its Simple Auth (Web App) client, a device identity.
  const owner = await ownerToken(skyport.url);
  const product = await ownerProduct(skyport.url, owner, 'Web lamps');
  const client = await createProductClient(skyport.url, owner, product, { name: 'lamp web', type: 'web', redirect_uri: pageUrl, scope: 'customers:create' });
  const [identity] = await provisionDevices(skyport.url, owner, product, 1);
  assert.ok(identity);

  // The lamp, out of the box: in listening mode, a home network and a neighbour's around it.
  const calls: string[] = [];
  const device = createDevice({ url: skyport.mqttUrl, id: identity.id, secret: identity.secret });
  device.function('led', (arg) => {
    calls.push(arg);
    return arg === 'on' ? 1 : 0;
  });
  const setup = await device.listen({
    networks: [
      { ssid: 'home', password: 'correct horse', security: 'wpa2', channel: 6, rssi: -50 },
      { ssid: 'neighbour', security: 'open', channel: 11, rssi: -80 },
    ],
  });
  const steps: string[] = [];
  setup.on('progress', (p) => steps.push(p.step));
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    // Whatever goes wrong in the page (a script error, a refused Content-Security-Policy) fails the
    // test; but not the page's probes of the device while it is away joining the network, nor
    // the browser's asking for a favicon.
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (m) => {
      const expected = (m.location().url.startsWith(setup.http.url) && /net::ERR_/.test(m.text())) || m.location().url.endsWith('/favicon.ico');
      if (m.type() === 'error' && !expected) pageErrors.push(`${m.text()} (${m.location().url})`);
    });
    const sent: Request[] = [];
    page.on('request', (r) => sent.push(r));

    const query = new URLSearchParams({ api: skyport.url, product: product.slug, client: client.id, device: setup.http.url });
    await page.goto(`${pageUrl}?${query}`);
    assert.equal(await page.getByLabel('Skyport API URL').inputValue(), skyport.url, 'the query string fills the settings in');
    assert.equal(await page.getByLabel('Product id or slug').inputValue(), product.slug);
    assert.equal(await page.getByLabel('OAuth client ID').inputValue(), client.id);
    assert.equal(await page.getByLabel('Device setup address').inputValue(), setup.http.url);
    assert.equal(await page.getByRole('button', { name: 'Set up device' }).isDisabled(), true, 'no setup before an account');

    // 1. The account: Skyport creates the customer from the client's ID alone.
    const customer = email('web-customer');
    await page.getByLabel('E-mail').fill(customer);
    await page.getByLabel('Password', { exact: true }).fill('customer password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await sees(page, 'Account status', new RegExp(`Signed in as ${customer.replace(/[.+]/g, '\\$&')}`));
    const signUp = sent.find((r) => r.url().endsWith(`/v1/products/${product.slug}/customers`));
    assert.ok(signUp);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(signUp.postData() ?? '')), { client_id: client.id, email: customer, password: 'customer password' });
    assert.equal(signUp.headers().authorization, undefined, 'no secret, no Basic header');

    // 2. Device setup: the claim code goes to the device; the networks it sees are listed.
    await page.getByRole('button', { name: 'Set up device' }).click();
    await sees(page, 'Setup progress', /sees 2 Wi-Fi networks: pick yours/);
    const networks = page.getByRole('group', { name: 'Wi-Fi network' }).getByRole('radio');
    assert.equal(await networks.count(), 2);
    assert.deepEqual(await page.getByRole('group', { name: 'Wi-Fi network' }).locator('label').allTextContents(), ['home', 'neighbour'], 'by name, strongest first');
    for (const ssid of ['home', 'neighbour']) assert.equal(await page.getByRole('radio', { name: ssid, exact: true }).count(), 1, ssid);
    assert.match(await page.getByRole('group', { name: 'Wi-Fi network' }).innerText(), /home\s+WPA2, signal -50 dBm, channel 6\s+neighbour\s+open, signal -80 dBm, channel 11/);
    const claimSet = sent.find((r) => r.url() === `${setup.http.url}/set`);
    assert.match(JSON.parse(claimSet?.postData() ?? '{}').v ?? '', /^.{48}$/, 'the claim code went to the device');
    assert.equal(claimSet?.headers()['content-type'], 'application/x-www-form-urlencoded', 'a simple request: no pre-flight');

    // 3. A wrong password: the device comes back to listening mode; the page says so and lets the person try again.
    await page.getByRole('radio', { name: 'home' }).check();
    await page.getByLabel('Wi-Fi password').fill('wrong horse');
    await page.getByRole('button', { name: 'Connect' }).click();
    await sees(page, 'Setup progress', /The device could not join home; check the password and try again\./, 30_000);
    assert.ok(steps.includes('join-failed'), `the device failed to join (steps: ${steps.join(', ')})`);
    assert.equal(device.claimed, false);
    const configure = sent.filter((r) => r.url() === `${setup.http.url}/configure-ap`).map((r) => JSON.parse(r.postData() ?? '{}'));
    assert.equal(configure.length, 1);
    assert.match(configure[0].pwd, /^[0-9a-f]{256}$/, 'the password went encrypted with the 1024-bit key');
    assert.deepEqual([configure[0].idx, configure[0].ssid, configure[0].ch, typeof configure[0].sec], [0, 'home', 6, 'number']);
    assert.equal((await raw(`${skyport.url}/v1/products/${product.id}/devices/${identity.id}`, { token: owner })).json.online, false);

    // 4. The right password: online, and the customer's.
    await page.getByRole('radio', { name: 'home' }).check();
    await page.getByLabel('Wi-Fi password').fill('correct horse');
    await page.getByRole('button', { name: 'Connect' }).click();
    await sees(page, 'Setup progress', new RegExp(`Your lamp ${identity.id} is online on home, and it is yours\\.`), 60_000);
    assert.deepEqual(await setup.done, { claimed: true });
    assert.equal(device.claimed, true);
    assert.ok(steps.includes('joined') && steps.includes('online') && steps.includes('claimed'), steps.join(', '));

    // 5. The lamp's button calls its function with the customer's token.
    assert.deepEqual(calls, []);
    await page.getByRole('button', { name: 'Turn on' }).click();
    await sees(page, 'Lamp', /Turned on: the lamp answered 1\./);
    assert.deepEqual(calls, ['on'], 'the call reached the device');
    assert.deepEqual(await seriousA11yViolations(page), [], 'the page, set up');
    assert.deepEqual(pageErrors, []);

    // Skyport's record: the device is the customer's, who exists as a customer with a password.
    const record = await raw(`${skyport.url}/v1/products/${product.id}/devices/${identity.id}`, { token: owner });
    assert.equal(record.status, 200, record.text);
    assert.equal(record.json.owner, customer);
    assert.equal(record.json.online, true);
    const customers = await raw(`${skyport.url}/v1/products/${product.id}/customers`, { token: owner });
    const listed = (customers.json.customers as Array<{ username: string; shadow: boolean; devices: string[] }>).find((c) => c.username === customer);
    assert.deepEqual(listed && { shadow: listed.shadow, devices: listed.devices }, { shadow: false, devices: [identity.id] });
  } finally {
    await context.close();
    await setup.stop().catch(() => undefined);
    await device.close();
  }
});

test('the page\'s server serves the page\'s files, with a policy refusing inline script, and nothing outside its folder', async () => {
  const page = await fetch(pageUrl);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self';/);
  assert.match(await page.text(), /<script type="module" src="main\.js">/);
  for (const file of ['main.js', 'api.js', 'device-setup.js', 'rsa.js', 'style.css']) {
    assert.equal((await fetch(new URL(file, pageUrl))).status, 200, file);
  }
  // Raw paths, as a client that does not tidy them up would send them.
  const { request } = await import('node:http');
  const get = (path: string) => new Promise<number>((resolve, reject) => {
    const url = new URL(pageUrl);
    request({ host: url.hostname, port: url.port, path }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on('error', reject).end();
  });
  for (const path of ['/../package.json', '/..%2fpackage.json', '/%2e%2e/%2e%2e/package.json', '/serve.mjs', '/README.md', '/.git', '/%00', '/..\\package.json', '/nested/main.js']) {
    assert.equal(await get(path), 404, path);
  }
  assert.equal((await fetch(pageUrl, { method: 'POST' })).status, 405);
});
