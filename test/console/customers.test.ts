import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { email } from '../helpers/server.js';
import { basic, raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's customers page in Chromium: created with and without a password, a new password, deleted. */
const tested = consoleUnderTest();


/** A product with its Simple Auth client, through the API. */
async function productWithApp(token: string, name: string) {
  const product = await newProduct(tested.server.url, token, name);
  const app = (await raw(`${tested.server.url}/v1/products/${product.id}/clients`, { method: 'POST', token, json: { name: 'app', scope: 'customers:create' } })).json.client as { id: string; secret: string };
  const login = (username: string, password: string) =>
    raw(`${tested.server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(app.id, app.secret) }, form: { grant_type: 'password', username, password } });
  return { product, login };
}

const row = (page: Page, name: string) => page.getByRole('row', { name: new RegExp(name.replace(/[.+]/g, '\\$&')) });

describe('customers', { concurrency: true }, () => {
  test('create with a password (it logs in) and without (shadow); a taken e-mail said in words; a new password; delete after confirming', async () => {
    const owner = await signUp(tested.server.url);
    const { product, login } = await productWithApp(owner.token, 'Customer Fleet');
    const page = await tested.loggedIn(owner.username, `/products/${product.slug}`);
    await page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name: 'Customers' }).click();
    await page.getByText('No customers in this product yet.').waitFor();
    assert.deepEqual(await seriousA11yViolations(page), [], 'the customers page');

    const simple = email('simple');
    await page.getByLabel('E-mail').fill(simple);
    await page.getByLabel('With a password').check();
    await page.getByLabel('Password', { exact: true }).fill('customer pass');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.getByText(`Customer ${simple} created.`).waitFor();
    await row(page, simple).waitFor();
    assert.match((await row(page, simple).textContent()) ?? '', /with a password/);
    const first = await login(simple, 'customer pass');
    assert.equal(first.status, 200, first.text);

    const shadow = email('shadow');
    await page.getByLabel('E-mail').fill(shadow);
    await page.getByLabel('No password (shadow customer)').check();
    assert.equal(await page.getByLabel('Password', { exact: true }).count(), 0);
    await page.getByRole('button', { name: 'Create customer' }).click();
    await row(page, shadow).waitFor();
    assert.match((await row(page, shadow).textContent()) ?? '', /no password \(shadow\)/);
    assert.equal((await login(shadow, '')).status, 400);

    // The same e-mail again, in capitals: the API's words.
    await page.getByLabel('E-mail').fill(simple.toUpperCase());
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /already exists/);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the customers list');
    assert.ok(await fitsPhoneWidth(page), 'the customers page fits a phone');

    // A new password: the old one no longer logs in, the new one does; its tokens are revoked.
    await page.getByRole('button', { name: `Set password for ${simple}` }).click();
    await page.getByLabel('New password', { exact: true }).fill('a brand new pass');
    await page.getByRole('button', { name: 'Save' }).click();
    await row(page, simple).getByText('Password changed.').waitFor();
    assert.equal((await login(simple, 'customer pass')).status, 400);
    assert.equal((await login(simple, 'a brand new pass')).status, 200);
    assert.equal((await raw(`${tested.server.url}/v1/devices`, { token: first.json.access_token })).status, 401);

    await page.getByRole('button', { name: `Delete ${simple}` }).click();
    await page.getByText('Its tokens and claim codes are revoked and its devices released.').waitFor();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await row(page, simple).waitFor({ state: 'detached' });
    const left = (await raw(`${tested.server.url}/v1/products/${product.id}/customers`, { token: owner.token })).json.customers as Array<{ username: string }>;
    assert.deepEqual(left.map((c) => c.username), [shadow]);
    assert.equal((await login(simple, 'a brand new pass')).status, 400);
    await page.context().close();
  });

  test('each customer with its devices; 25 a page', async () => {
    const owner = await signUp(tested.server.url);
    const { product, login } = await productWithApp(owner.token, 'Paged Customers');
    // A customer who claimed a device.
    const claimer = email('claimer');
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/customers`, { method: 'POST', token: owner.token, json: { email: claimer, password: 'claimer pass' } })).status, 201);
    const customerToken = (await login(claimer, 'claimer pass')).json.access_token as string;
    const who = await provision(tested.server.url, owner.token, product.id);
    const device = await fakeDevice(tested.server.mqttUrl, who);
    try {
      const code = await raw(`${tested.server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: customerToken, json: {} });
      assert.deepEqual(await device.claim(code.json.claim_code as string), { ok: true });
    } finally {
      await device.close();
    }
    await Promise.all(Array.from({ length: 25 }, (_, i) =>
      raw(`${tested.server.url}/v1/products/${product.id}/customers`, { method: 'POST', token: owner.token, json: { email: email(`many${i}`), no_password: true } })));

    const page = await tested.loggedIn(owner.username, `/products/${product.slug}/customers`);
    await page.getByText('Page 1 of 2 (26 customers)').waitFor();
    assert.equal(await page.locator('tbody tr').count(), 25);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 2 (26 customers)').waitFor();
    assert.equal(await page.locator('tbody tr').count(), 1);
    // Wherever the claimer is listed, its device is with it.
    const onPage = async () => (await row(page, claimer).count()) > 0;
    if (!(await onPage())) {
      await page.getByRole('button', { name: 'Previous' }).click();
      await page.getByText('Page 1 of 2 (26 customers)').waitFor();
    }
    assert.match((await row(page, claimer).textContent()) ?? '', new RegExp(who.id));
    await page.context().close();
  });
});
