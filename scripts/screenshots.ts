// Regenerates the screenshots of the web console's main pages in docs/console/ (docs/console.md
// shows them): npm run docs:screenshots
//
// It starts a Skyport of its own (embedded store, free ports), makes an account, a product and a
// device through the API, runs the device with `skyport sim`, and photographs each page in
// headless Chromium (Debian's chromium, as the tests use).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Locator, type Page } from 'playwright-core';
import { api, captureOutput, onCleanup, ROOT, runCleanups, startSkyport, stopChild, track } from '../bench/harness.js';

const OUT = join(ROOT, 'docs', 'console');
const USER = 'ada@example.com';
const PASSWORD = 'screenshot password';

/** A page of the console: its address, what shows once it is drawn, and the file it goes to. */
interface Shot { file: string; path: string; ready: (page: Page) => Promise<unknown>; part?: (page: Page) => Locator }

async function main(): Promise<void> {
  const server = await startSkyport('embedded', { build: ROOT });
  await api(`${server.url}/v1/users`, { json: { username: USER, password: PASSWORD } });
  const { access_token: token } = await api<{ access_token: string }>(`${server.url}/oauth/token`, { form: { grant_type: 'password', username: USER, password: PASSWORD }, basic: ['particle-api', 'particle-api'] });
  const { product } = await api<{ product: { id: number; slug: string } }>(`${server.url}/v1/user/products`, { token, json: { product: { name: 'Trackers', description: 'Our tracker fleet', platform_id: 26 } } });
  const { devices } = await api<{ devices: Array<{ id: string; device_secret: string }> }>(`${server.url}/v1/products/${product.id}/device_identities`, { token, json: { quantity: 3 } });
  const online = devices[0]!;
  await api(`${server.url}/v1/products/${product.id}/devices/${online.id}`, { method: 'PUT', token, json: { name: 'van-07', notes: 'Delivery van, north depot' } });

  // The first device runs in the simulator, as docs/console.md tells a newcomer to do.
  const scratch = mkdtempSync(join(tmpdir(), 'skyport-shots-'));
  onCleanup(() => rmSync(scratch, { recursive: true, force: true }));
  const credentials = join(scratch, 'device.csv');
  writeFileSync(credentials, `id,device_secret\n${online.id},${online.device_secret}\n`);
  const sim = track(spawn(process.execPath, [join(ROOT, 'bin', 'skyport.js'), 'sim', '--credentials', credentials, '--api-url', server.url, '--mqtt-url', `mqtt://${server.mqttHost}:${server.mqttPort}`, '--token', token], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const simOutput = captureOutput(sim);
  onCleanup(() => stopChild(sim));
  for (let i = 0; ; i++) {
    const d = await api<{ online: boolean }>(`${server.url}/v1/products/${product.id}/devices/${online.id}`, { token });
    if (d.online) break;
    if (i > 100) throw new Error(`the simulated device did not come online:\n${simOutput()}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  const p = `/products/${product.slug}`;
  const heading = (name: string | RegExp) => (page: Page) => page.getByRole('heading', { name }).first().waitFor();
  // A history to show: the fleet's LED off, then a device's own geofence zone.
  await api(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } });
  await api(`${server.url}/v1/products/${product.id}/config/${online.id}`, { method: 'PUT', token, json: { geofence: { zone1: { enable: true, lat: 52.37, lon: 4.89, radius: 500 } } } });
  const d = `${p}/devices/${online.id}`;
  const shots: Shot[] = [
    { file: 'products.png', path: '/', ready: heading('Products') },
    { file: 'devices.png', path: p, ready: (page) => page.getByText('online', { exact: true }).first().waitFor() },
    { file: 'device.png', path: d, ready: (page) => page.getByText(/Declared: led, echo/).waitFor() },
    { file: 'configuration.png', path: `${p}/config`, ready: heading('Fleet configuration') },
    { file: 'rollout.png', path: `${p}/config`, ready: (page) => page.getByText(/Of 3 device\(s\)/).waitFor(), part: (page) => page.locator('section[aria-labelledby="rollout-title"]') },
    { file: 'device-settings.png', path: `${d}/config`, ready: (page) => page.getByRole('row', { name: /^Geofence/ }).waitFor() },
    // Each version's changes are read one by one: the shot waits until none is still loading.
    { file: 'history.png', path: `${p}/config/history`, ready: (page) => page.waitForFunction("document.querySelectorAll('td').length > 0 && ![...document.querySelectorAll('td')].some((td) => td.textContent === '…')") },
    { file: 'schema.png', path: `${p}/config/schema`, ready: heading(/schema/i) },
    { file: 'clients.png', path: `${p}/clients`, ready: heading(/OAuth clients/) },
    { file: 'account.png', path: '/account', ready: heading(/Security log/) },
  ];

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  onCleanup(() => browser.close());
  const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  await page.goto('/');
  await page.screenshot({ path: join(OUT, 'log-in.png') });
  await page.getByLabel('E-mail').fill(USER);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('button', { name: 'Log out' }).waitFor();
  for (const shot of shots) {
    await page.goto(shot.path);
    await shot.ready(page);
    if (shot.part) await shot.part(page).screenshot({ path: join(OUT, shot.file) });
    else await page.screenshot({ path: join(OUT, shot.file) });
    console.log(`docs/console/${shot.file}`);
  }
}

main()
  .then(runCleanups, async (err: unknown) => {
    console.error(err);
    await runCleanups();
    process.exitCode = 1;
  });
