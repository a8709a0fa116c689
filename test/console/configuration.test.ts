import { test } from 'node:test';
import assert from 'node:assert/strict';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { configDevice, provision, type Holdings } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's product pages in Chromium: the fleet's devices, and its configuration form. */
const tested = consoleUnderTest();


test('the fleet page lists the product devices, online or not', async () => {
  const { username, token } = await signUp(tested.server.url);
  const product = await newProduct(tested.server.url, token, 'Listed');
  const online = await provision(tested.server.url, token, product.id);
  const offline = await provision(tested.server.url, token, product.id);
  const device = await configDevice(tested.server.mqttUrl, online, new Map());
  try {
    // The connect is stored after CONNACK, and the page reads it from the list: wait for it first.
    await eventually(async () => ((await raw(`${tested.server.url}/v1/products/${product.id}/devices/${online.id}`, { token })).json.online === true ? true : undefined));
    const page = await tested.loggedIn(username, `/products/${product.slug}`);
    await page.getByRole('heading', { name: 'Devices' }).waitFor();
    const state = async (id: string) => (await page.getByRole('row', { name: new RegExp(id) }).textContent()) ?? '';
    await page.getByRole('row', { name: new RegExp(online.id) }).waitFor();
    assert.match(await state(online.id), /online/);
    assert.match(await state(offline.id), /offline/);
    assert.match((await page.getByText(/Page 1 of 1/).textContent()) ?? '', /2 devices/);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the fleet page');
    assert.ok(await fitsPhoneWidth(page), 'the fleet page fits a phone');
    await page.context().close();
  } finally {
    device.client.end(true);
  }
});

test('the fleet configuration form: drawn from the schema, a dry run, saved and taken by a connected device', async () => {
  const { username, token } = await signUp(tested.server.url);
  const product = await newProduct(tested.server.url, token, 'Configured');
  const who = await provision(tested.server.url, token, product.id);
  const held: Holdings = new Map();
  const device = await configDevice(tested.server.mqttUrl, who, held);
  try {
    await eventually(() => (held.get('rgb')?.value.type === 'particle' ? true : undefined));
    const page = await tested.loggedIn(username, `/products/${product.slug}/config`);
    await page.getByRole('heading', { name: 'Fleet configuration' }).waitFor();
    // One panel per module, in the schema's order; geofence is device-level only.
    const legends = await page.locator('fieldset fieldset > legend').allTextContents();
    // (A required module's legend ends with a star.)
    assert.deepEqual(legends.slice(0, 5).map((l) => l.replace(/\*$/, '').trim()), ['Location', 'Store and Forward', 'Motion', 'Temperature', 'RGB LED']);
    assert.ok(!legends.some((l) => l.includes('Geofence')), legends.join(', '));
    assert.deepEqual(await seriousA11yViolations(page), [], 'the configuration form');
    assert.ok(await fitsPhoneWidth(page), 'the configuration form fits a phone');

    await page.locator('select#root_rgb_type').selectOption('off');
    await page.getByRole('button', { name: 'Check reach' }).click();
    await page.getByText('This change reaches 1 device(s), 1 of them online now.').waitFor();
    // A value out of its range is shown at its field, and nothing is saved.
    await page.locator('#root_sleep_exe_min').fill('-5');
    await page.getByRole('button', { name: 'Save' }).click();
    const fieldError = page.locator('#root_sleep_exe_min__error');
    await fieldError.waitFor();
    assert.match((await fieldError.textContent()) ?? '', /must be >=/);
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/config`, { token })).json.configuration.rgb.type, 'particle');

    await page.locator('#root_sleep_exe_min').fill('10');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/Saved as version/).waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/config`, { token })).json.configuration.rgb.type, 'off');
    await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
    await page.context().close();
  } finally {
    device.client.end(true);
  }
});
