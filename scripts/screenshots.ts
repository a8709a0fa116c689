// Regenerates the screenshots of the web console's main pages in docs/console/ (docs/console.md
// shows them): npm run docs:screenshots
//
// It starts a Skyport of its own (embedded store, free ports), makes an account, a product and a
// device through the API, runs the device with `skyport sim`, and photographs each page in
// headless Chromium (Debian's chromium, as the tests use).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Locator, type Page } from 'playwright-core';
import { api, captureOutput, onCleanup, ROOT, runCleanups, startSkyport, stopChild, track } from '../bench/harness.js';

const OUT = join(ROOT, 'docs', 'console');
const USER = 'ada@example.com';
const PASSWORD = 'screenshot password';

interface FirmwareTestHelper { createFirmwareBinary(o: { productId: number; productVersion: number; platformId: number; dataSize: number }): Buffer }
const { firmwareTestHelper } = createRequire(import.meta.url)('binary-version-reader') as { firmwareTestHelper: FirmwareTestHelper };

/** Uploads a made-up binary of `version` (binary-version-reader's test helper makes valid modules). */
async function uploadFirmware(url: string, token: string, productId: number, version: number, title: string, description: string): Promise<void> {
  const form = new FormData();
  form.append('version', String(version));
  form.append('title', title);
  form.append('description', description);
  form.append('file', new Blob([firmwareTestHelper.createFirmwareBinary({ productId, productVersion: version, platformId: 26, dataSize: 90_000 + (version % 10) * 4096 })]), `tracker-v${version}.bin`);
  const res = await fetch(`${url}/v1/products/${productId}/firmware`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  if (res.status !== 201) throw new Error(`upload of version ${version}: ${res.status} ${await res.text()}`);
}

/** Waits until `some` shows and `loading` is gone. */
async function settled(some: Locator, loading: Locator): Promise<void> {
  await some.first().waitFor();
  for (let i = 0; (await loading.count()) > 0; i++) {
    if (i > 150) throw new Error('the page kept loading');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A page of the console: its address, what shows once it is drawn, and the file it goes to. */
interface Shot { file: string; path: string; ready: (page: Page) => Promise<unknown>; part?: (page: Page) => Locator; fullPage?: boolean }

async function main(): Promise<void> {
  const server = await startSkyport('embedded', { build: ROOT });
  await api(`${server.url}/v1/users`, { json: { username: USER, password: PASSWORD } });
  const { access_token: token } = await api<{ access_token: string }>(`${server.url}/oauth/token`, { form: { grant_type: 'password', username: USER, password: PASSWORD }, basic: ['particle-api', 'particle-api'] });
  const { product } = await api<{ product: { id: number; slug: string } }>(`${server.url}/v1/user/products`, { token, json: { product: { name: 'Trackers', description: 'Our tracker fleet', platform_id: 26 } } });
  const { devices } = await api<{ devices: Array<{ id: string; device_secret: string }> }>(`${server.url}/v1/products/${product.id}/device_identities`, { token, json: { quantity: 3 } });
  const online = devices[0]!;
  await api(`${server.url}/v1/products/${product.id}/devices/${online.id}`, { method: 'PUT', token, json: { name: 'van-07', notes: 'Delivery van, north depot' } });
  // Firmware: the fleet on version 18 (every module of the default schema applies from 18 on),
  // version 19 about to go to the north depot's group, 20 not released yet.
  await uploadFirmware(server.url, token, product.id, 18, 'Launch', 'First fleet release');
  await uploadFirmware(server.url, token, product.id, 19, 'Faster GPS fix', 'Keeps the GNSS warm between fixes');
  await uploadFirmware(server.url, token, product.id, 20, 'Geofence tweaks', 'Zone checks every 10 s');
  await api(`${server.url}/v1/products/${product.id}/firmware/release`, { method: 'PUT', token, json: { version: 18, product_default: true } });
  await api(`${server.url}/v1/products/${product.id}/groups`, { token, json: { name: 'north-depot', color: '#3d5a80', description: 'Vans based at the north depot' } });
  await api(`${server.url}/v1/products/${product.id}/groups`, { token, json: { name: 'field-test', color: '#e76f51', description: 'Try new versions here first' } });
  await api(`${server.url}/v1/products/${product.id}/devices`, { method: 'PUT', token, json: { action: 'groups', devices: [online.id, devices[1]!.id], metadata: { add: ['north-depot'] } } });
  await api(`${server.url}/v1/products/${product.id}/devices`, { method: 'PUT', token, json: { action: 'groups', devices: [devices[2]!.id], metadata: { add: ['field-test'] } } });

  // The first device runs in the simulator, as docs/console.md tells a newcomer to do.
  const scratch = mkdtempSync(join(tmpdir(), 'skyport-shots-'));
  onCleanup(() => rmSync(scratch, { recursive: true, force: true }));
  const credentials = join(scratch, 'device.csv');
  writeFileSync(credentials, `id,device_secret\n${online.id},${online.device_secret}\n`);
  const sim = track(spawn(process.execPath, [join(ROOT, 'bin', 'skyport.js'), 'sim', '--credentials', credentials, '--api-url', server.url, '--mqtt-url', `mqtt://${server.mqttHost}:${server.mqttPort}`, '--token', token, '--firmware-version', '18'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const simOutput = captureOutput(sim);
  onCleanup(() => stopChild(sim));
  for (let i = 0; ; i++) {
    const d = await api<{ online: boolean }>(`${server.url}/v1/products/${product.id}/devices/${online.id}`, { token });
    if (d.online) break;
    if (i > 100) throw new Error(`the simulated device did not come online:\n${simOutput()}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  // The group's online van takes version 19 over the air, for the Firmware page's updates.
  await api(`${server.url}/v1/products/${product.id}/firmware/release`, { method: 'PUT', token, json: { version: 19, groups: ['north-depot'], intelligent: true } });
  for (let i = 0; ; i++) {
    const d = await api<{ firmware_version: number | null }>(`${server.url}/v1/products/${product.id}/devices/${online.id}`, { token });
    if (d.firmware_version === 19) break;
    if (i > 150) throw new Error(`the simulated device did not take version 19:\n${simOutput()}`);
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
    { file: 'device-firmware.png', path: d, ready: (page) => page.getByText('version 19', { exact: true }).first().waitFor(), part: (page) => page.locator('section[aria-labelledby="device-firmware-title"]') },
    { file: 'firmware.png', path: `${p}/firmware`, ready: (page) => page.getByText('1 device: 1 updated').waitFor(), fullPage: true },
    { file: 'groups.png', path: `${p}/groups`, ready: (page) => page.getByRole('row', { name: /north-depot/ }).waitFor() },
    { file: 'configuration.png', path: `${p}/config`, ready: heading('Fleet configuration') },
    { file: 'rollout.png', path: `${p}/config`, ready: (page) => page.getByText(/Of 3 device\(s\)/).waitFor(), part: (page) => page.locator('section[aria-labelledby="rollout-title"]') },
    { file: 'device-settings.png', path: `${d}/config`, ready: (page) => page.getByRole('row', { name: /^Geofence/ }).waitFor() },
    // Each version's changes are read one by one: the shot waits until none is still loading.
    // (Polled from here: the console's Content-Security-Policy refuses a function evaluated in the page.)
    { file: 'history.png', path: `${p}/config/history`, ready: (page) => settled(page.locator('td'), page.getByRole('cell', { name: '…', exact: true })) },
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
    else await page.screenshot({ path: join(OUT, shot.file), fullPage: shot.fullPage === true });
    console.log(`docs/console/${shot.file}`);
  }
}

main()
  .then(runCleanups, async (err: unknown) => {
    console.error(err);
    await runCleanups();
    process.exitCode = 1;
  });
