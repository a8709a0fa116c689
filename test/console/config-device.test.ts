import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { configDevice, provision, type Holdings } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's configuration as devices live it: the rollout of a fleet change, and a device's settings. */
const tested = consoleUnderTest();


const legends = async (page: Page) => (await page.locator('fieldset fieldset > legend').allTextContents()).map((l) => l.replace(/\*$/, '').trim());
const rowText = async (page: Page, name: string) => (await page.getByRole('row', { name: new RegExp(`^${name}`) }).textContent()) ?? '';

describe('configuration and devices', { concurrency: true }, () => {
  test('a fleet change saved in the form: the rollout bars follow the devices until both are in sync, and the device shows it current', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Rolled');
    const first = await provision(tested.server.url, token, product.id);
    const second = await provision(tested.server.url, token, product.id);
    const held: Holdings = new Map();
    const device = await configDevice(tested.server.mqttUrl, first, held);
    const later: Holdings = new Map();
    let other: Awaited<ReturnType<typeof configDevice>> | undefined;
    try {
      await eventually(() => (held.get('rgb') ? true : undefined));
      const page = await tested.loggedIn(username, `/products/${product.slug}/config`);
      await page.getByRole('heading', { name: 'Rollout' }).waitFor();
      // The second device has never connected: it is pending.
      await page.getByText('Of 2 device(s): 1 in sync, 1 pending (0 of them online), 0 refused a value.').waitFor();
      assert.deepEqual(await seriousA11yViolations(page), [], 'the configuration page with its rollout');
      assert.ok(await fitsPhoneWidth(page), 'the rollout fits a phone');

      await page.locator('select#root_rgb_type').selectOption('off');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText(/Saved as version 1/).waitFor();
      await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
      const rgb = page.getByRole('list', { name: 'Rollout by module' }).getByRole('listitem').filter({ hasText: 'RGB LED' });
      await rgb.getByText('1 in sync, 1 pending, 0 refused').waitFor();

      // The other device connects while the page is open: the bars move on their own.
      other = await configDevice(tested.server.mqttUrl, second, later);
      await page.getByText('Of 2 device(s): 2 in sync, 0 pending (0 of them online), 0 refused a value.').waitFor();
      await rgb.getByText('2 in sync, 0 pending, 0 refused').waitFor();
      assert.equal(later.get('rgb')?.value.type, 'off');

      // The device's settings: RGB LED from the fleet, in sync.
      await page.goto(`/products/${product.slug}/devices/${first.id}/config`);
      await page.getByRole('heading', { name: /Settings of device/ }).waitFor();
      await page.getByRole('row', { name: /^RGB LED/ }).waitFor();
      assert.match(await rowText(page, 'RGB LED'), /fleet\s*In sync/);
      assert.match(await rowText(page, 'Location'), /fleet\s*In sync/, 'the form saved the whole configuration');
      await page.context().close();
    } finally {
      device.client.end(true);
      other?.client.end(true);
    }
  });

  test("a regular device: only its device-level modules, the value it refused at its field with the reason, and each setting's source", async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Refusing');
    const who = await provision(tested.server.url, token, product.id);
    const held: Holdings = new Map();
    const device = await configDevice(tested.server.mqttUrl, who, held, (module) => (module === 'geofence' && held.has('geofence') ? -33 : 0));
    try {
      await eventually(() => (held.get('geofence') ? true : undefined));
      const page = await tested.loggedIn(username, `/products/${product.slug}/devices/${who.id}/config`);
      await page.getByRole('heading', { name: /Settings of device/ }).waitFor();
      const shownModules = await legends(page);
      assert.equal(shownModules[0], 'Geofence');
      assert.ok(!shownModules.includes('RGB LED'), shownModules.join(', '));
      assert.equal(await page.locator('#root_geofence_interval__help').textContent(), "From the schema's default.");

      await page.locator('#root_geofence_interval').fill('7');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('The device refused part of the configuration').waitFor();
      const atField = page.locator('#root_geofence__error');
      await atField.waitFor();
      assert.match((await atField.textContent()) ?? '', /The device refused this module: a value out of range\./);
      await page.getByRole('row', { name: /^Geofence.*Refused: a value out of range/ }).waitFor();
      assert.match(await rowText(page, 'Geofence'), /this device/);
      await page.getByText('Geofence: current and refused values').click();
      assert.match((await page.locator('details[open]').textContent()) ?? '', /"interval":7/);
      // A page read afresh still shows the refusal at its field, and the source of what was written.
      await page.reload();
      await page.locator('#root_geofence__error').waitFor();
      assert.equal(await page.locator('#root_geofence_interval__help').textContent(), 'Set on this device.');
      assert.deepEqual(await seriousA11yViolations(page), [], 'the device settings page');
      assert.ok(await fitsPhoneWidth(page), 'the device settings page fits a phone');
      await page.context().close();
    } finally {
      device.client.end(true);
    }
  });

  test('a development device: every module, each setting with its source, and its own value taken', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Developing');
    const who = await provision(tested.server.url, token, product.id);
    const made = await raw(`${tested.server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'PUT', token, json: { development: true } });
    assert.equal(made.status, 200, made.text);
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } })).status, 200);
    const held: Holdings = new Map();
    const device = await configDevice(tested.server.mqttUrl, who, held);
    try {
      await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
      const page = await tested.loggedIn(username, `/products/${product.slug}/devices/${who.id}/config`);
      await page.getByText(/A development device/).waitFor();
      const shownModules = await legends(page);
      for (const m of ['Location', 'RGB LED', 'Sleep', 'Geofence']) assert.ok(shownModules.includes(m), `${m} in ${shownModules.join(', ')}`);
      assert.equal(await page.locator('#root_rgb_type__help').textContent(), 'From the fleet configuration.');
      assert.equal(await page.locator('#root_location_radius__help').textContent(), "From the schema's default.");

      await page.locator('select#root_rgb_type').selectOption('tracker');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText(/Saved as version 2: the device took it\./).waitFor();
      assert.equal(held.get('rgb')?.value.type, 'tracker');
      const own = await raw(`${tested.server.url}/v1/products/${product.id}/config/${who.id}`, { token });
      assert.deepEqual(Object.keys(own.json.own), ['rgb'], 'only the module changed becomes the device’s own');
      await eventually(async () => ((await page.locator('#root_rgb_type__help').textContent()) === 'Set on this device.' ? true : undefined));
      // The delivery table and the notes come from two reads, refreshed each on its own.
      await eventually(async () => (/this device\s*In sync/.test(await rowText(page, 'RGB LED')) ? true : undefined));
      assert.equal(await page.locator('#root_location_radius__help').textContent(), "From the schema's default.");
      assert.deepEqual(await seriousA11yViolations(page), [], 'a development device settings');
      assert.ok(await fitsPhoneWidth(page), 'a development device settings fit a phone');

      // Its own values cleared, after a confirmation: the fleet's value comes back.
      await page.getByRole('button', { name: 'Clear its own values…' }).click();
      const confirm = page.getByRole('group', { name: /Clear the values set on this device\?/ });
      await confirm.waitFor();
      assert.equal(held.get('rgb')?.value.type, 'tracker', 'nothing happens before the confirmation');
      await confirm.getByRole('button', { name: 'Clear its values' }).click();
      await page.getByText(/Saved as version 3/).waitFor();
      await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
      await eventually(async () => ((await page.locator('#root_rgb_type__help').textContent()) === 'From the fleet configuration.' ? true : undefined));
      await page.context().close();
    } finally {
      device.client.end(true);
    }
  });

  test('an unknown device: its settings page says so in words', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Unknown');
    const page = await tested.loggedIn(username, `/products/${product.slug}/devices/0123456789abcdef01234567/config`);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.ok(((await alert.textContent()) ?? '').length > 5);
    await page.context().close();
  });
});
