import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import mqtt from 'mqtt';
import { raw } from '../helpers/http.js';
import { newProduct, PASSWORD, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { spawnSkyport } from '../helpers/cli.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, seriousA11yViolations } from '../helpers/browser.js';

/** A device's page in Chromium: details, calls and reads of a simulated device, its events, its settings. */
const tested = consoleUnderTest();

async function devicePage(username: string, slug: string, id: string): Promise<Page> {
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username, PASSWORD, `/products/${slug}/devices/${id}`);
  await page.getByRole('heading', { name: new RegExp(id) }).waitFor();
  await page.getByText('Live: changes show as they happen.').waitFor();
  return page;
}

const state = (page: Page) => page.locator('dl.pairs dt:text-is("State") + dd');

describe('a device page', { concurrency: true, timeout: 120_000 }, () => {
  test('a device online before the page opened, whose declarations are stored after the page read it, shows them without a reload', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Late hello');
    const who = await provision(tested.server.url, token, product.id);
    // Connected, with nothing declared yet: the page opens on an online device that declares nothing.
    const device = await mqtt.connectAsync(tested.server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
    try {
      const page = await devicePage(username, product.slug, who.id);
      assert.equal(await state(page).textContent(), 'online');
      await page.getByText('The device has declared no function (yet).').waitFor();
      // Its hello comes now: no spark/status event follows for the page to notice.
      await device.publishAsync(`devices/${who.id}/hello`, JSON.stringify({ functions: ['late'], variables: {} }), { qos: 1 });
      await page.getByText(/Declared: late/).waitFor({ timeout: 10_000 });
      await page.close();
    } finally {
      await device.endAsync();
    }
  });

  test('a simulated device (skyport sim) comes online live: its functions called, its variables read, its events listed; paused while it stops', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Simulated');
    const who = await provision(tested.server.url, token, product.id);
    const page = await devicePage(username, product.slug, who.id);
    assert.equal(await state(page).textContent(), 'offline');
    await page.getByText('The device has declared no function (yet).').waitFor();

    const dir = mkdtempSync(join(tmpdir(), 'skyport-console-device-'));
    const credentials = join(dir, 'device.csv');
    writeFileSync(credentials, `id,secret\n${who.id},${who.secret}\n`);
    const sim = spawnSkyport(['sim', '--credentials', credentials, '--mqtt-url', tested.server.mqttUrl]);
    try {
      await state(page).getByText('online').waitFor({ timeout: 15_000 });
      const events = page.getByRole('list', { name: 'Events, newest first' });
      await events.getByText('spark/status').waitFor();
      assert.match((await events.locator('li').first().textContent()) ?? '', /spark\/status\s*online/);
      // Online, it has told what it declares.
      await page.getByText(/Declared: led, echo/).waitFor();

      await page.getByRole('combobox', { name: 'Function' }).fill('echo');
      await page.getByRole('textbox', { name: 'Argument' }).fill('hello');
      await page.getByRole('button', { name: 'Call' }).click();
      await page.getByRole('status').getByText('echo returned 5').waitFor();
      await page.getByRole('combobox', { name: 'Function' }).fill('nope');
      await page.getByRole('button', { name: 'Call' }).click();
      const refused = page.getByRole('alert');
      await refused.waitFor();
      assert.match((await refused.textContent()) ?? '', /no function "nope"|not declared/);

      await page.getByRole('button', { name: 'Read temp' }).click();
      const temp = page.getByLabel('Value of temp');
      await temp.getByText(/^\d+(\.\d+)?$/).waitFor();
      assert.ok(Number(await temp.textContent()) >= 19, await temp.textContent() ?? '');
      await page.getByRole('button', { name: 'Read uptime' }).click();
      await page.getByLabel('Value of uptime').getByText(/^\d+$/).waitFor();
      await page.getByRole('button', { name: 'Signal on' }).click();
      await page.getByText('The device is signalling').waitFor();
      assert.deepEqual(await seriousA11yViolations(page), [], 'the device page');
      assert.ok(await fitsPhoneWidth(page), 'the device page fits a phone');

      // Paused, the list stands still; the state still follows.
      await page.getByRole('button', { name: 'Pause' }).click();
      sim.child.kill('SIGINT');
      assert.equal(await sim.exit, 0, sim.err());
      await state(page).getByText('offline').waitFor();
      await page.getByText('Paused: 1 event(s) not shown.').waitFor();
      assert.equal(await events.locator('li').count(), 1);
      await page.getByRole('button', { name: 'Resume' }).click();

      // Offline, a call is refused in words.
      await page.getByRole('combobox', { name: 'Function' }).fill('echo');
      await page.getByRole('button', { name: 'Call' }).click();
      await page.getByRole('alert').getByText(/not connected/).waitFor();
      await page.context().close();
    } finally {
      sim.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('rename, notes, development flag and removal (after a confirmation); a refused name said in words', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Edited');
    const who = await provision(tested.server.url, token, product.id);
    const page = await devicePage(username, product.slug, who.id);
    const url = `${tested.server.url}/v1/products/${product.id}/devices/${who.id}`;
    assert.equal(await page.getByRole('link', { name: 'Device settings' }).getAttribute('href'), `/products/${product.slug}/devices/${who.id}/config`);

    await page.getByRole('textbox', { name: 'Name' }).fill('not a name!');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').getByText(/name must be/).waitFor();
    await page.getByRole('textbox', { name: 'Name' }).fill('truck_7');
    await page.getByRole('textbox', { name: 'Notes' }).fill('left depot');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: /truck_7/ }).waitFor();
    const named = (await raw(url, { token })).json;
    assert.deepEqual([named.name, named.notes], ['truck_7', 'left depot']);

    await page.getByRole('button', { name: 'Make it a development device' }).click();
    await page.getByText('development device', { exact: true }).waitFor();
    assert.equal((await raw(url, { token })).json.development, true);
    await page.getByRole('button', { name: 'Make it a regular device' }).click();
    await page.getByText('regular device', { exact: true }).waitFor();
    assert.equal((await raw(url, { token })).json.development, false);

    // Remove asks first; cancel keeps it.
    await page.getByRole('button', { name: 'Remove from the product' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await raw(url, { token })).status, 200);
    await page.getByRole('button', { name: 'Remove from the product' }).click();
    await page.getByRole('button', { name: 'Yes, remove it' }).click();
    await page.getByText('No devices in this product yet.').waitFor();
    assert.equal((await raw(url, { token })).status, 404);

    // A device not (or no longer) in the product: said in words, with the way back.
    await page.goto(`/products/${product.slug}/devices/${who.id}`);
    await page.getByRole('alert').getByText(/not found/i).waitFor();
    await page.getByRole('link', { name: 'Back to the devices' }).waitFor();
    await page.context().close();
  });
});
