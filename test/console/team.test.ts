import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { email } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { enableMfa, newProduct, signUp } from '../helpers/fixtures.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's product team and settings pages in Chromium. */
const tested = consoleUnderTest();


const tab = (page: Page, name: string) => page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name, exact: true });

describe('team and settings', { concurrency: true }, () => {
  test('the team: invite an existing account (and an unknown one, refused in words), remove after confirming, the last member refused', async () => {
    const owner = await signUp(tested.server.url);
    const invitee = await signUp(tested.server.url);
    await enableMfa(tested.server.url, invitee.token);
    const product = await newProduct(tested.server.url, owner.token, 'Team Fleet');
    const page = await tested.loggedIn(owner.username, `/products/${product.slug}`);
    await tab(page, 'Team').click();
    await page.getByRole('heading', { name: 'Team', exact: true }).waitFor();
    const row = (name: string) => page.getByRole('row', { name: new RegExp(name.replace(/[.+]/g, '\\$&')) });
    assert.match((await row(owner.username).textContent()) ?? '', /\(you\)administratoroff/);

    // An unknown account: the API's words, and nothing added.
    const unknown = email('nobody');
    await page.getByLabel('E-mail of an existing account').fill(unknown);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /No account with the username .*it must sign up first/);

    await page.getByLabel('E-mail of an existing account').fill(invitee.username);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(`${invitee.username} is now a member of the team.`).waitFor();
    await row(invitee.username).waitFor();
    assert.match((await row(invitee.username).textContent()) ?? '', /administratoron/, 'MFA on');
    const team = async () => ((await raw(`${tested.server.url}/v1/products/${product.id}/team`, { token: owner.token })).json.team as Array<{ username: string }>).map((m) => m.username).sort();
    assert.deepEqual(await team(), [owner.username, invitee.username].sort());
    assert.deepEqual(await seriousA11yViolations(page), [], 'the team page');
    assert.ok(await fitsPhoneWidth(page), 'the team page fits a phone');

    await page.getByRole('button', { name: `Remove ${invitee.username}` }).click();
    await page.getByText(`Remove ${invitee.username} from the team?`).waitFor();
    await page.getByRole('button', { name: 'Yes, remove' }).click();
    await row(invitee.username).waitFor({ state: 'detached' });
    assert.deepEqual(await team(), [owner.username]);

    // The last member: refused by the API, said in its words, still there.
    await page.getByRole('button', { name: `Remove ${owner.username}` }).click();
    await page.getByRole('button', { name: 'Yes, remove' }).click();
    await page.getByText('The last member of a team cannot be removed; delete the product instead').waitFor();
    assert.deepEqual(await team(), [owner.username]);
    await page.context().close();
  });

  test('settings: rename and describe the product; a refused name in words; delete it after typing its slug (it has customers)', async () => {
    const owner = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, owner.token, 'Settings Fleet');
    const customer = await raw(`${tested.server.url}/v1/products/${product.id}/customers`, { method: 'POST', token: owner.token, json: { email: email('cust'), no_password: true } });
    assert.equal(customer.status, 201, customer.text);
    // From another tab than Devices: each tab's link leads to its own page, and only it is current.
    const page = await tested.loggedIn(owner.username, `/products/${product.slug}/customers`);
    await page.getByRole('heading', { name: 'Customers', exact: true }).waitFor();
    await tab(page, 'Settings').click();
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/products/${product.slug}/settings`);
    assert.deepEqual(await page.locator('nav.tabs a[aria-current="page"]').allTextContents(), ['Settings']);
    assert.equal(await page.getByLabel('Name').inputValue(), 'Settings Fleet');
    assert.deepEqual(await seriousA11yViolations(page), [], 'the settings page');
    assert.ok(await fitsPhoneWidth(page), 'the settings page fits a phone');

    await page.getByLabel('Name').fill('   ');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').waitFor();
    assert.ok(((await page.getByRole('alert').textContent()) ?? '').length > 5);

    await page.getByLabel('Name').fill('Renamed Fleet');
    await page.getByLabel('Description').fill('trackers of the north');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const held = (await raw(`${tested.server.url}/v1/products/${product.id}`, { token: owner.token })).json.product;
    assert.deepEqual([held.name, held.description, held.slug], ['Renamed Fleet', 'trackers of the north', product.slug]);

    // Deleting needs the slug typed exactly.
    const remove = page.getByRole('button', { name: 'Delete product' });
    assert.ok(await remove.isDisabled());
    await page.getByLabel(/Type the product's slug/).fill('settings-fleet-x');
    assert.ok(await remove.isDisabled());
    await page.getByLabel(/Type the product's slug/).fill(product.slug);
    await remove.click();
    await page.getByRole('heading', { name: 'Products' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/');
    await page.getByText('No products yet').waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}`, { token: owner.token })).status, 403);
    await page.context().close();
  });
});
