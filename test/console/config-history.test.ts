import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { raw } from '../helpers/http.js';
import { engineSchema, newProduct, signUp } from '../helpers/fixtures.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's configuration history (versions, diffs, rollback) and its schema page. */
const tested = consoleUnderTest();


const SCHEMA = 'application/schema+json';
const json = (name: string, body: unknown) => ({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(body)) });

describe('configuration history and schema pages', { concurrency: true }, () => {
  test('history: who changed what and when, two versions side by side, a rollback after its confirmation', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Historic');
    const base = `${tested.server.url}/v1/products/${product.id}/config`;
    assert.equal((await raw(base, { method: 'PUT', token, json: { rgb: { type: 'off' } } })).status, 200);
    assert.equal((await raw(base, { method: 'PUT', token, json: { rgb: { type: 'tracker' }, sleep: { mode: 'enable' } } })).status, 200);
    const schema = await raw(base, { method: 'PUT', token, headers: { 'content-type': SCHEMA }, body: JSON.stringify(engineSchema()) });
    assert.equal(schema.status, 200, schema.text);

    const page = await tested.loggedIn(username, `/products/${product.slug}/config`);
    await page.getByRole('navigation', { name: 'Configuration' }).getByRole('link', { name: 'History' }).click();
    await page.getByRole('heading', { name: 'Configuration history' }).waitFor();
    const tabs = page.getByRole('navigation', { name: 'Product' });
    assert.equal(await tabs.getByRole('link', { name: 'Configuration' }).getAttribute('aria-current'), 'page');
    assert.equal(await tabs.getByRole('link', { name: 'Devices' }).getAttribute('aria-current'), null);
    assert.equal(await tabs.getByRole('link', { name: 'Devices' }).getAttribute('href'), `/products/${product.slug}`);
    const row = (v: number) => page.getByRole('row', { name: new RegExp(`^${v} `) });
    await row(2).getByText('/rgb/type: off → tracker; /sleep set to {"mode":"enable"}').waitFor();
    assert.match((await row(2).textContent()) ?? '', new RegExp(`Fleet values, written${username.replace(/[.+]/g, '\\$&')}`));
    assert.match((await row(1).textContent()) ?? '', /\/rgb set to \{"type":"off"\}/);
    await row(3).getByText(/Schema, schema replaced/).waitFor();

    // Versions 1 and 2 side by side: the changed settings marked, in words too.
    const compare = page.getByRole('region', { name: 'Compare two versions' });
    await compare.getByLabel('Older version').selectOption('1');
    await compare.getByLabel('Newer version').selectOption('2');
    await compare.getByText('2 setting(s) changed between version 1 and version 2.').waitFor();
    const changed = async (path: string) => (await compare.getByRole('row', { name: new RegExp(`^${path.replace(/\//g, '\\/')} `) }).textContent()) ?? '';
    assert.equal(await changed('/rgb/type'), '/rgb/typeofftrackerchanged');
    assert.equal(await changed('/sleep/mode'), '/sleep/mode—enableadded');
    assert.equal(await compare.locator('tr.changed').count(), 2);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the history page');
    assert.ok(await fitsPhoneWidth(page), 'the history page fits a phone');
    // Versions of different scopes cannot be compared: said in words.
    await compare.getByLabel('Newer version').selectOption('3');
    await compare.getByRole('alert').getByText(/different scopes/).waitFor();

    // Rollback: a confirmation first, then the new version at the top of the list.
    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    const confirm = page.getByRole('group', { name: 'Write version 1 again as a new change?' });
    await confirm.waitFor();
    assert.equal((await raw(base, { token })).json.configuration.rgb.type, 'tracker', 'nothing happens before the confirmation');
    await confirm.getByRole('button', { name: 'Roll back' }).click();
    await page.getByText('Rolled back to version 1: the change is version 4, delivered like any other.').waitFor();
    await row(4).getByText('Fleet values, rolled back to version 1').waitFor();
    assert.equal((await raw(base, { token })).json.configuration.rgb.type, 'off');
    await page.context().close();
  });

  test('the schema: shown and downloaded, a custom one refused by path then taken and drawn as the form, the default restored after a confirmation', async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Schematic');
    const page = await tested.loggedIn(username, `/products/${product.slug}/config/schema`);
    await page.getByRole('heading', { name: 'Configuration schema' }).waitFor();
    await page.getByText('The product uses the default schema.').waitFor();
    assert.match((await page.getByLabel('The schema in force, as JSON').textContent()) ?? '', /"\$id": "https:\/\/skyport\.dev\/schemas\/tracker-config\/v19"/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the schema' }).click()]);
    assert.equal(download.suggestedFilename(), `${product.slug}-schema.json`);
    const saved = JSON.parse(await readFile(await download.path(), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys((saved.properties ?? {}) as object).slice(0, 2), ['location', 'store']);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the schema page');
    assert.ok(await fitsPhoneWidth(page), 'the schema page fits a phone');

    const upload = page.getByLabel('Upload a custom schema (a JSON file)');
    await upload.setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"type": ') });
    await page.getByRole('alert').getByText(/broken\.json is not JSON/).waitFor();
    const bad = engineSchema({ code: { type: 'string', title: 'Code', default: '', pattern: '^[a-z]+$' } });
    delete bad.properties.rgb;
    await upload.setInputFiles(json('bad.json', bad));
    const violations = page.getByRole('list', { name: 'Violations' });
    await violations.waitFor();
    const lines = await violations.getByRole('listitem').allTextContents();
    assert.ok(lines.includes('/properties/rgb: rgb of the default schema is missing'), lines.join('\n'));
    assert.ok(lines.includes('/properties/engine/properties/code/pattern: pattern is not allowed in configuration schemas'), lines.join('\n'));
    await page.getByText('The product uses the default schema.').waitFor();

    await upload.setInputFiles(json('engine.json', engineSchema()));
    await page.getByText('The product uses a custom schema.').waitFor();
    await page.getByRole('status').getByText(/version 1/).waitFor();
    await page.getByRole('navigation', { name: 'Configuration' }).getByRole('link', { name: 'Form' }).click();
    await page.getByRole('heading', { name: 'Fleet configuration' }).waitFor();
    await page.locator('#root_engine_idle').waitFor();
    assert.equal(await page.locator('#root_engine_idle').inputValue(), '1600');

    await page.getByRole('navigation', { name: 'Configuration' }).getByRole('link', { name: 'Schema' }).click();
    await page.getByRole('button', { name: 'Restore the default schema…' }).click();
    const confirm = page.getByRole('group', { name: /Restore the default schema\?/ });
    await confirm.waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/config`, { token, headers: { accept: SCHEMA } })).json.properties.engine?.title, 'Engine', 'nothing happens before the confirmation');
    await confirm.getByRole('button', { name: 'Restore the default' }).click();
    await page.getByText('The product uses the default schema.').waitFor();
    await page.getByRole('status').getByText(/Schema reverted to default/).waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/config`, { token, headers: { accept: SCHEMA } })).json.properties.engine, undefined);
    await page.context().close();
  });
});
