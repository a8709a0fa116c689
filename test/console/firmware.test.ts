import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { raw } from '../helpers/http.js';
import { eventually } from '../helpers/eventually.js';
import { newProduct, PASSWORD, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { firmwareBinary, reportVersion, uploaded } from '../helpers/firmware.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, seriousA11yViolations } from '../helpers/browser.js';
import { runSimulation } from '../../src/sim/simulator.js';

/**
 * The Firmware and Groups pages in Chromium: uploads (a refusal said in words), the list, edit,
 * download and delete; a release to a group with its impact and the server's warning; a group's
 * simulated device updated over the air while the page shows it, and one outside it left alone; a
 * staged rollout started, followed, paused by its error threshold and aborted; groups made,
 * changed and deleted; devices put in groups from the fleet's list and the list filtered by
 * group; a device's firmware lock, forced updates and groups on its page.
 */
const tested = consoleUnderTest();

async function opened(username: string, path: string, heading: string | RegExp): Promise<Page> {
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username, PASSWORD, path);
  await page.getByRole('heading', { name: heading, exact: typeof heading === 'string' }).waitFor();
  return page;
}

async function checked(page: Page, what: string): Promise<void> {
  assert.deepEqual(await seriousA11yViolations(page), [], what);
  assert.ok(await fitsPhoneWidth(page), `${what} fits a phone`);
}

const api = (path: string, token: string, init: { method?: string; json?: unknown } = {}) => raw(`${tested.server.url}${path}`, { token, ...init });
const row = (page: Page, name: RegExp) => page.getByRole('row', { name });

describe('the firmware and groups pages', { concurrency: true, timeout: 180_000 }, () => {
  test('upload: a binary of another product refused in words; a valid one, its version read from the file; edit, download, delete', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Uploads');
    const page = await opened(username, `/products/${product.slug}/firmware`, 'Firmware');
    await page.getByText('No firmware yet').waitFor();
    await page.getByRole('button', { name: 'Upload a version' }).click();

    const file = page.getByLabel('Firmware binary');
    await file.setInputFiles({ name: 'other.bin', mimeType: 'application/octet-stream', buffer: firmwareBinary(product.id + 1, 2) });
    // The version comes from the file's module suffix.
    const version = page.getByRole('spinbutton', { name: 'Version' });
    await eventually(async () => ((await version.inputValue()) === '2' ? true : undefined), 5000, 'the version read from the file');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    const refused = page.getByRole('alert');
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? '', /^Refused, built for another product: The binary's module suffix names product \d+; this is product \d+/);
    assert.deepEqual((await api(`/v1/products/${product.id}/firmware`, token)).json, [], 'nothing stored');

    const image = firmwareBinary(product.id, 2, { dataSize: 3000 });
    await file.setInputFiles({ name: 'blink.bin', mimeType: 'application/octet-stream', buffer: image });
    await page.getByLabel('Title').fill('Blink');
    await page.getByLabel('Description').fill('blinks the LED');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByRole('status').getByText('Version 2 uploaded: Blink').waitFor();
    const listed = row(page, /^2 Blink/);
    await listed.waitFor();
    assert.match((await listed.textContent()) ?? '', /blinks the LED.*KiB.*0 devices.*not released/);
    assert.match((await listed.textContent()) ?? '', new RegExp(`by ${username.replace(/[.+]/g, '\\$&')}`));
    await checked(page, 'the firmware page');

    await page.getByRole('button', { name: 'Edit version 2' }).click();
    await page.getByRole('heading', { name: 'Edit version 2' }).waitFor();
    await page.getByRole('textbox', { name: 'Title' }).last().fill('Blink fast');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Edit version 2' }).waitFor({ state: 'detached' });
    await row(page, /^2 Blink fast/).waitFor();
    assert.equal((await api(`/v1/products/${product.id}/firmware/2`, token)).json.title, 'Blink fast');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download version 2' }).click()]);
    assert.equal(download.suggestedFilename(), 'blink.bin');
    assert.deepEqual(await readFile(await download.path()), image, 'the download is the binary uploaded');

    // A version never released goes, after a confirmation.
    await uploaded(tested.server.url, token, product.id, 3);
    await page.reload();
    await row(page, /^3 v3/).waitFor();
    await page.getByRole('button', { name: 'Delete version 3' }).click();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await row(page, /^3 v3/).waitFor({ state: 'detached' });
    assert.equal((await api(`/v1/products/${product.id}/firmware/3`, token)).status, 404);
    await page.context().close();
  });

  test('a release to a group: the devices it would update counted before it is confirmed, and the server\'s warning after', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Releases');
    const devices = await Promise.all([0, 1, 2].map(() => provision(tested.server.url, token, product.id)));
    await Promise.all(devices.map((d) => reportVersion(tested.server.url, tested.server.mqttUrl, token, product.id, d, 1)));
    await uploaded(tested.server.url, token, product.id, 1);
    await uploaded(tested.server.url, token, product.id, 2, { title: 'Faster' });
    const beta = devices.slice(0, 2).map((d) => d.id);
    assert.equal((await api(`/v1/products/${product.id}/devices`, token, { method: 'PUT', json: { action: 'groups', devices: beta, metadata: { add: ['beta'] } } })).status, 200);

    const page = await opened(username, `/products/${product.slug}/firmware`, 'Firmware');
    await page.getByRole('button', { name: 'Release version 2' }).click();
    await page.getByRole('heading', { name: 'Release version 2' }).waitFor();
    const impact = page.getByRole('status', { name: 'Impact' });
    await impact.getByText('No device would update now.').waitFor();
    await page.getByRole('checkbox', { name: /Group beta/ }).check();
    await impact.getByText('2 devices would update: 2 from version 1.').waitFor();
    await page.getByRole('button', { name: 'Release version 2…' }).click();
    await page.getByRole('group', { name: /Release version 2 to group beta\? 2 devices would update/ }).waitFor();
    await checked(page, 'the release form');
    await page.getByRole('button', { name: 'Yes, release it' }).click();
    await page.getByText('Version 2 is released to group beta.').waitFor();
    await page.getByText(/No device of the product runs version 2 yet\. Particle refuses/).waitFor();
    await row(page, /^2 Faster/).getByText('group beta').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Delete version 2' }).count(), 0, 'a released version is not deleted');

    const released = (await api(`/v1/products/${product.id}/firmware/2`, token)).json;
    assert.deepEqual([released.groups, released.product_default], [['beta'], false]);
    const targets = await Promise.all(devices.map(async (d) => (await api(`/v1/products/${product.id}/devices/${d.id}`, token)).json.targeted_firmware_release_version));
    assert.deepEqual(targets, [2, 2, null], 'the group is given version 2; the device outside it is not');
    await page.context().close();
  });

  test('a binary uploaded and released to a group in the page: the group\'s simulated device updates while the page shows it; a device outside the group stays', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Over the air');
    const [inGroup, outside] = await Promise.all([0, 1].map(() => provision(tested.server.url, token, product.id)));
    assert.equal((await api(`/v1/products/${product.id}/devices/${inGroup!.id}`, token, { method: 'PUT', json: { groups: ['field'] } })).status, 200);
    const sim = await runSimulation({ mqttUrl: tested.server.mqttUrl, identities: [inGroup!, outside!], firmwareVersion: 1 });
    try {
      const running = async (id: string) => (await api(`/v1/products/${product.id}/devices/${id}`, token)).json.firmware_version;
      await eventually(async () => ((await running(inGroup!.id)) === 1 && (await running(outside!.id)) === 1 ? true : undefined), 10_000, 'the devices said they run version 1');
      const page = await opened(username, `/products/${product.slug}/firmware`, 'Firmware');
      const updates = page.getByRole('region', { name: 'Updates' });
      await updates.getByText('No device has been offered an update yet').waitFor();

      await page.getByRole('button', { name: 'Upload a version' }).click();
      await page.getByLabel('Firmware binary').setInputFiles({ name: 'field.bin', mimeType: 'application/octet-stream', buffer: firmwareBinary(product.id, 2, { dataSize: 30_000 }) });
      await page.getByLabel('Title').fill('Field test');
      await page.getByRole('button', { name: 'Upload', exact: true }).click();
      await page.getByRole('status').getByText('Version 2 uploaded: Field test').waitFor();
      await page.getByRole('button', { name: 'Release version 2' }).click();
      await page.getByRole('checkbox', { name: /Group field/ }).check();
      await page.getByRole('checkbox', { name: /Update online devices now/ }).check();
      const impact = page.getByRole('status', { name: 'Impact' });
      await impact.getByText('1 device would update: 1 from version 1.').waitFor();
      await page.getByRole('button', { name: 'Release version 2…' }).click();
      await page.getByRole('button', { name: 'Yes, release it' }).click();
      await page.getByText('Version 2 is released to group field.').waitFor();

      // The page follows the update: the bar's words, then the version's count of devices running it.
      const bars = updates.getByRole('list', { name: 'Updates by version' });
      await bars.getByText('Version 2').waitFor({ timeout: 15_000 });
      await bars.getByText('1 device: 1 updated').waitFor({ timeout: 15_000 });
      await row(page, /^2 Field test/).getByText('1 device').waitFor();
      assert.equal(await bars.getByRole('listitem').count(), 1, 'only the version released');
      await checked(page, 'the firmware page with its updates');
      assert.deepEqual([await running(inGroup!.id), await running(outside!.id)], [2, 1], 'the group\'s device runs version 2; the other stays on 1');
      assert.equal(await tested.server.skyport.services.firmwareUpdates.stateOf(outside!.id), null, 'nothing offered to the device outside the group');
      assert.equal(sim.updates.applied, 1);
      await page.context().close();
    } finally {
      await Promise.all(sim.devices.map((d) => d.close()));
    }
  });

  test('a staged rollout over the fleet started in the page: its waves\' live progress; it pauses by itself once the simulated failures pass its error threshold; aborted after a confirmation', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Rolled out');
    const ids = await Promise.all([0, 1, 2, 3].map(() => provision(tested.server.url, token, product.id)));
    await uploaded(tested.server.url, token, product.id, 1);
    await uploaded(tested.server.url, token, product.id, 2, { title: 'Careful' });
    // Two devices take the update; two refuse it, as `skyport sim --fail-updates refuse=1` does.
    const sims = await Promise.all([
      runSimulation({ mqttUrl: tested.server.mqttUrl, identities: ids.slice(0, 2), firmwareVersion: 1 }),
      runSimulation({ mqttUrl: tested.server.mqttUrl, identities: ids.slice(2), firmwareVersion: 1, updateFailures: { refuse: 1, check: 0, vanish: 0, revert: 0 } }),
    ]);
    try {
      const running = async (id: string) => (await api(`/v1/products/${product.id}/devices/${id}`, token)).json.firmware_version;
      await eventually(async () => ((await Promise.all(ids.map((d) => running(d.id)))).every((v) => v === 1) ? true : undefined), 10_000, 'the devices said they run version 1');
      const page = await opened(username, `/products/${product.slug}/firmware`, 'Firmware');
      const rollouts = page.getByRole('region', { name: 'Staged rollouts' });
      await rollouts.getByText('No rollout yet.').waitFor();
      await rollouts.getByRole('button', { name: 'Start a rollout' }).click();
      const form = rollouts.getByRole('form', { name: 'Start a rollout' });
      await form.getByRole('combobox', { name: 'Version' }).selectOption({ label: '2 Careful' });
      await form.getByRole('spinbutton', { name: 'Failed updates (count)' }).fill('1');
      // What the API refuses is said in its words, and nothing starts.
      await form.getByRole('textbox', { name: 'Wave 1 size' }).fill('half');
      await form.getByRole('button', { name: 'Start the rollout' }).click();
      await rollouts.getByRole('alert').getByText(/waves\[0\]\.percent must be a share in %/).waitFor();
      assert.deepEqual((await api(`/v1/products/${product.id}/firmware/rollouts`, token)).json.rollouts, []);
      await form.getByRole('textbox', { name: 'Wave 1 size' }).fill('50');
      await form.getByRole('button', { name: 'Start the rollout' }).click();

      const card = rollouts.getByRole('region', { name: 'Rollout of version 2 to the fleet' });
      await card.waitFor();
      const waves = card.getByRole('list', { name: 'Waves of the rollout of version 2' });
      await waves.getByText('Wave 1 (50 %), under way').waitFor();
      await waves.getByText('Wave 2 (the rest), waiting').waitFor();
      await checked(page, 'a rollout under way');
      // The leader's ticks, as the test's: the page shows what each did, read every two seconds.
      const state = card.getByRole('status', { name: 'Rollout state' });
      await eventually(async () => {
        await tested.server.skyport.services.firmware.rollouts.tick();
        return /^Paused: /.test((await state.textContent()) ?? '') ? true : undefined;
      }, 30_000, 'the rollout paused by itself');
      assert.match((await state.textContent()) ?? '', /failed.*error threshold/);
      assert.match((await waves.getByRole('listitem').last().textContent()) ?? '', /All waves.*\d+ failed/);
      const stored = (await api(`/v1/products/${product.id}/firmware/rollouts`, token)).json.rollouts[0];
      assert.deepEqual([stored.state, stored.reason.code], ['paused', 'error_threshold']);
      await card.getByRole('button', { name: 'Resume' }).waitFor();

      await card.getByRole('button', { name: 'Abort the rollout of version 2' }).click();
      await card.getByRole('button', { name: 'Yes, abort it' }).click();
      const ended = rollouts.getByRole('table', { name: 'Rollouts that ended, newest first' });
      await ended.getByRole('row', { name: /^2 the fleet Aborted/ }).waitFor();
      assert.equal((await api(`/v1/products/${product.id}/firmware/rollouts`, token)).json.rollouts[0].state, 'aborted');
      await rollouts.getByRole('button', { name: 'Start a rollout' }).waitFor();
      await page.context().close();
    } finally {
      await Promise.all(sims.flatMap((sim) => sim.devices.map((d) => d.close())));
    }
  });

  test('groups: a name refused in words, made with a colour and description, renamed, deleted after a confirmation', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Grouped');
    const page = await opened(username, `/products/${product.slug}/groups`, 'Groups');
    await page.getByText('No groups yet').waitFor();
    await page.getByRole('button', { name: 'New group' }).click();
    const form = page.getByRole('form', { name: 'New group' });
    await form.getByRole('textbox', { name: 'Name' }).fill('Europe');
    await form.getByRole('button', { name: 'Create group' }).click();
    await form.getByRole('alert').getByText('may hold only lower-case letters a-z, digits, dashes and underscores').waitFor();

    await form.getByRole('textbox', { name: 'Name' }).fill('europe');
    await form.getByLabel('Colour').fill('#e74c3c');
    await form.getByRole('textbox', { name: 'Description' }).fill('devices in the EU');
    await form.getByRole('button', { name: 'Create group' }).click();
    await form.getByRole('status').getByText('Group europe created.').waitFor();
    await row(page, /europe/).getByText('devices in the EU').waitFor();
    const made = (await api(`/v1/products/${product.id}/groups/europe`, token)).json.group;
    assert.deepEqual([made.color, made.description, made.device_count], ['#e74c3c', 'devices in the EU', 0]);
    await checked(page, 'the groups page');

    await page.getByRole('button', { name: 'Edit europe' }).click();
    const edit = page.getByRole('region', { name: 'Edit group europe' });
    await edit.getByRole('textbox', { name: 'Name' }).fill('eu-west');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await row(page, /eu-west/).waitFor();
    assert.equal((await api(`/v1/products/${product.id}/groups/europe`, token)).status, 404);
    assert.equal((await api(`/v1/products/${product.id}/groups/eu-west`, token)).json.group.description, 'devices in the EU');

    await page.getByRole('button', { name: 'Delete eu-west' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await api(`/v1/products/${product.id}/groups/eu-west`, token)).status, 200, 'cancelled: still there');
    await page.getByRole('button', { name: 'Delete eu-west' }).click();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await page.getByText('No groups yet').waitFor();
    assert.equal((await api(`/v1/products/${product.id}/groups/eu-west`, token)).status, 404);
    await page.context().close();
  });

  test('devices put in a group from the fleet\'s list and taken out again; the list filtered by group, by link too', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Assigned');
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => provision(tested.server.url, token, product.id)));
    const page = await opened(username, `/products/${product.slug}`, 'Devices');
    await row(page, new RegExp(c!.id)).waitFor();
    await page.getByRole('checkbox', { name: `Select ${a!.id}` }).check();
    await page.getByRole('checkbox', { name: `Select ${b!.id}` }).check();
    const assign = page.getByRole('form', { name: 'Groups of the selected devices' });
    await assign.getByText('2 devices selected').waitFor();
    await assign.getByRole('combobox', { name: 'Group' }).fill('field');
    await assign.getByRole('button', { name: 'Add to group' }).click();
    await assign.getByRole('status').getByText('2 devices added to field.').waitFor();
    await row(page, new RegExp(a!.id)).getByText('field').waitFor();
    await checked(page, 'the fleet with a selection');
    const groupsOf = async (id: string) => (await api(`/v1/products/${product.id}/devices/${id}`, token)).json.groups;
    assert.deepEqual(await Promise.all([a, b, c].map((d) => groupsOf(d!.id))), [['field'], ['field'], []]);

    await page.getByRole('combobox', { name: 'Group', exact: true }).first().selectOption('field');
    await page.waitForURL(/\?group=field$/);
    await row(page, new RegExp(c!.id)).waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('checkbox', { name: /^Select [0-9a-f]{24}$/ }).count(), 2);

    await page.getByRole('button', { name: 'Clear the selection' }).click();
    await page.getByRole('checkbox', { name: `Select ${b!.id}` }).check();
    await assign.getByRole('combobox', { name: 'Group' }).fill('field');
    await assign.getByRole('button', { name: 'Remove from group' }).click();
    await assign.getByRole('status').getByText('1 device taken out of field.').waitFor();
    await row(page, new RegExp(b!.id)).waitFor({ state: 'detached' });
    assert.deepEqual(await groupsOf(b!.id), []);

    // The Groups page counts the group's devices, and links to the list filtered by it.
    await page.getByRole('link', { name: 'Groups', exact: true }).click();
    await page.getByRole('link', { name: '1 device(s) in field' }).click();
    await page.waitForURL(/\?group=field$/);
    await row(page, new RegExp(a!.id)).waitFor();
    assert.equal(await page.getByRole('checkbox', { name: /^Select [0-9a-f]{24}$/ }).count(), 1);
    await page.context().close();
  });

  test('a device\'s page: locked to a version with "flash now" and unlocked, updates forced, put in a group and taken out', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Locks');
    const who = await provision(tested.server.url, token, product.id);
    await uploaded(tested.server.url, token, product.id, 1, { title: 'First' });
    await uploaded(tested.server.url, token, product.id, 2, { title: 'Second' });
    const url = `/v1/products/${product.id}/devices/${who.id}`;
    const page = await opened(username, `/products/${product.slug}/devices/${who.id}`, new RegExp(who.id));
    const section = page.getByRole('region', { name: 'Firmware' });
    const pair = (name: string) => section.locator(`dl.pairs dt:text-is("${name}") + dd`);
    await pair('Locked to').getByText('not locked').waitFor();
    assert.equal(await pair('Updates').textContent(), 'enabledAs the device reports it (System.disableUpdates()).');

    await section.getByRole('combobox', { name: 'Lock to version' }).selectOption('2');
    assert.equal(await section.getByRole('checkbox', { name: /Flash now/ }).isChecked(), true);
    await section.getByRole('button', { name: 'Lock' }).click();
    await section.getByRole('status').getByText('Locked to version 2: it updates now if it is online.').waitFor();
    await pair('Locked to').getByText('version 2').waitFor();
    await pair('Targeted').getByText('version 2').waitFor();
    let device = (await api(url, token)).json;
    assert.deepEqual([device.desired_firmware_version, device.targeted_firmware_release_version], [2, 2]);
    await checked(page, 'the device page with its firmware');

    await section.getByRole('button', { name: 'Unlock' }).click();
    await pair('Locked to').getByText('not locked').waitFor();
    assert.equal((await api(url, token)).json.desired_firmware_version, null);

    await section.getByRole('checkbox', { name: /Force updates/ }).check();
    await section.getByRole('status').getByText('Updates are forced on this device.').waitFor();
    assert.equal((await api(url, token)).json.firmware_updates_forced, true);

    const groups = page.getByRole('region', { name: 'Groups' });
    await groups.getByRole('combobox', { name: 'Group' }).fill('bench');
    await groups.getByRole('button', { name: 'Put it in the group' }).click();
    await groups.getByRole('link', { name: 'bench' }).waitFor();
    assert.deepEqual((await api(url, token)).json.groups, ['bench']);
    await groups.getByRole('button', { name: 'Take it out of bench' }).click();
    await groups.getByText('In no group.').waitFor();
    device = (await api(url, token)).json;
    assert.deepEqual(device.groups, []);

    // A development device is left alone by the cloud: the page says so.
    assert.equal((await api(url, token, { method: 'PUT', json: { development: true } })).status, 200);
    await page.reload();
    await section.getByText('A development device: the cloud does not update it').waitFor();
    await page.context().close();
  });
});
