import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { raw } from '../helpers/http.js';
import { newProduct, PASSWORD, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { spawnSkyport } from '../helpers/cli.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, seriousA11yViolations } from '../helpers/browser.js';

/** The fleet page in Chromium: live online state, adding devices (secrets once), importing ids. */
const tested = consoleUnderTest();

async function fleetPage(username: string, slug: string): Promise<Page> {
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username, PASSWORD, `/products/${slug}`);
  await page.getByRole('heading', { name: 'Devices' }).waitFor();
  // The fleet's event stream is open: what happens from now on shows without a reload.
  await page.getByText('Live: changes show as they happen.').waitFor();
  return page;
}

// Cells: the selection box, ID, name, groups, state, last heard.
const stateOf = (page: Page, id: string) => page.getByRole('row', { name: new RegExp(id) }).getByRole('cell').nth(4);

describe('the fleet page', { concurrency: true, timeout: 120_000 }, () => {
  test('one device added: its secret once, and the sim command that brings it online on the open page, live; offline when it stops', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Live');
    const page = await fleetPage(username, product.slug);
    await page.getByRole('button', { name: 'Add devices' }).click();
    await page.getByLabel('How many').fill('1');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByText('they will not be shown again').waitFor();
    const listed = (await raw(`${tested.server.url}/v1/products/${product.id}/devices`, { token })).json.devices as Array<{ id: string }>;
    assert.equal(listed.length, 1);
    const id = listed[0]!.id;
    const pairs = page.locator('dl.pairs dd code');
    assert.equal(await pairs.nth(0).textContent(), id);
    const secret = (await pairs.nth(1).textContent()) ?? '';
    assert.match(secret, /^[0-9a-f]{16,}$/);
    const command = (await page.getByLabel('Command that starts a simulated device').textContent()) ?? '';
    assert.ok(command.includes(id) && command.includes(secret), command);
    assert.ok(command.includes(`--mqtt-url ${tested.server.mqttUrl}`), command);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the fleet page with a new device');
    assert.ok(await fitsPhoneWidth(page), 'the fleet page with the command fits a phone');
    await stateOf(page, id).getByText('offline').waitFor();

    // The command as shown: the shell writes the identity's file, then `skyport sim` runs.
    const [write, run] = command.split(' && ') as [string, string];
    assert.match(run, /^npx skyport sim /);
    const dir = mkdtempSync(join(tmpdir(), 'skyport-console-sim-'));
    execFileSync('sh', ['-c', write], { cwd: dir });
    const args = run.split(' ').slice(2).map((a) => (a.endsWith('.csv') ? join(dir, a) : a));
    const sim = spawnSkyport(args);
    try {
      await stateOf(page, id).getByText('online').waitFor({ timeout: 15_000 });
      sim.child.kill('SIGINT');
      assert.equal(await sim.exit, 0, sim.err());
      await stateOf(page, id).getByText('offline').waitFor();
    } finally {
      sim.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      await page.context().close();
    }
  });

  test('many devices added: one CSV download with the header and a row each; a refused quantity said in words', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Many');
    const page = await fleetPage(username, product.slug);
    await page.getByRole('button', { name: 'Add devices' }).click();
    await page.getByLabel('How many').fill('10001');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const refused = page.getByRole('alert');
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? '', /10000|quantity/);

    await page.getByLabel('How many').fill('3');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('heading', { name: '3 devices added' }).waitFor();
    assert.equal(await page.getByLabel('Command that starts a simulated device').count(), 0, 'the command is for one device');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the ids and secrets (CSV)' }).click()]);
    assert.equal(download.suggestedFilename(), `${product.slug}-devices.csv`);
    const lines = readFileSync(await download.path(), 'utf8').trim().split('\n');
    assert.equal(lines[0], 'device_id,device_secret');
    assert.equal(lines.length, 4);
    const ids = (await raw(`${tested.server.url}/v1/products/${product.id}/devices`, { token })).json.devices.map((d: { id: string }) => d.id).sort();
    assert.deepEqual(lines.slice(1).map((l) => l.split(',')[0]).sort(), ids);
    // The secrets are the ones the devices connect with.
    const [firstId, firstSecret] = lines[1]!.split(',') as [string, string];
    const device = await fakeDevice(tested.server.mqttUrl, { id: firstId, secret: firstSecret });
    await device.close();
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByText('Page 1 of 1 (3 devices)').waitFor();
    await page.context().close();
  });

  test('import a file of ids in batches, with its progress and the result lists: added, already in, not moved, invalid', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Imports');
    const elsewhere = await newProduct(tested.server.url, token, 'Elsewhere');
    const already = await provision(tested.server.url, token, product.id);
    const free = await provision(tested.server.url, token, elsewhere.id);
    // Out of its product: known to the cloud, in no product, so an import takes it.
    assert.equal((await raw(`${tested.server.url}/v1/products/${elsewhere.id}/devices/${free.id}`, { method: 'DELETE', token })).status, 204);
    const stranger = await signUp(tested.server.url);
    const foreign = await provision(tested.server.url, stranger.token, (await newProduct(tested.server.url, stranger.token, 'Theirs')).id);
    // More ids than one batch takes: unknown ones, invalid.
    const unknown = Array.from({ length: 1100 }, () => randomBytes(12).toString('hex'));
    const file = [free.id, already.id, foreign.id, 'not-a-device', ...unknown].join('\n') + '\n';

    const page = await fleetPage(username, product.slug);
    await page.getByRole('button', { name: 'Import devices' }).click();
    await page.getByLabel('File of device ids').setInputFiles({ name: 'ids.txt', mimeType: 'text/plain', buffer: Buffer.from(file) });
    await page.getByText('1104 of 1104 ids').waitFor();
    const result = page.getByLabel('Import result');
    await result.getByText('Added: 1').waitFor();
    // By the summary's start: a list's ids are random hex, which may spell "added" (Playwright's
    // hasText matches any substring, in any case).
    const kind = async (title: string) => (await result.locator('details').filter({ has: page.locator('summary', { hasText: new RegExp(`^${title}:`) }) }).locator('li').allTextContents());
    assert.deepEqual(await kind('Added'), [free.id]);
    assert.deepEqual(await kind('Already in the product'), [already.id]);
    assert.deepEqual(await kind('Not moved'), [foreign.id]);
    const invalid = await kind('Invalid');
    assert.equal(invalid.length, 1101);
    assert.ok(invalid.includes('not-a-device') && invalid.includes(unknown[1099]!));
    assert.match((await result.locator('summary', { hasText: 'Invalid' }).textContent()) ?? '', /Invalid: 1101/);
    assert.equal(await result.getByText('Protected').count(), 0, 'no protected devices, no list');
    // The list shows the newcomer without a reload.
    await page.getByRole('row', { name: new RegExp(free.id) }).waitFor();
    assert.deepEqual(await seriousA11yViolations(page), [], 'the fleet page with an import result');
    assert.ok(await fitsPhoneWidth(page), 'the import result fits a phone');

    // A file with no id is refused in words, before anything is sent.
    await page.getByLabel('File of device ids').setInputFiles({ name: 'empty.txt', mimeType: 'text/plain', buffer: Buffer.from('\n\n') });
    await page.getByRole('alert').getByText('names no device ids').waitFor();
    await page.context().close();
  });
});
