import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { basic, raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { consoleUnderTest, fitsPhoneWidth, seriousA11yViolations } from '../helpers/browser.js';

/** The console's OAuth clients in Chromium: the user's (/clients) and a product's (/products/:slug/clients). */
const tested = consoleUnderTest();


/** Creates a client on the page; answers its ID and the secret the page showed (once). */
async function createClient(page: Page, kind: string, name: string, redirectUri?: string): Promise<{ id: string; secret: string; shown: Locator }> {
  await page.getByLabel(kind).check();
  await page.getByLabel('Name', { exact: true }).fill(name);
  if (redirectUri !== undefined) await page.getByLabel('Redirect URI').fill(redirectUri);
  await page.getByRole('button', { name: 'Create client' }).click();
  const shown = page.getByRole('region', { name: 'Client secret' });
  await shown.waitFor();
  assert.match((await shown.textContent()) ?? '', /will not be shown again/);
  const secret = (await shown.locator('p', { hasText: 'Client secret:' }).locator('code').textContent()) ?? '';
  const id = (await shown.locator('p', { hasText: 'Client ID:' }).locator('code').textContent()) ?? '';
  assert.ok(secret.length >= 20 && id.length >= 3, `${id} ${secret}`);
  return { id, secret, shown };
}

const clientCredentials = (id: string, secret: string) =>
  raw(`${tested.server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(id, secret) }, form: { grant_type: 'client_credentials' } });

describe('OAuth clients', { concurrency: true }, () => {
  test("the user's clients: the three kinds, each secret shown once and working; rename; delete revokes its tokens", async () => {
    const { username, token } = await signUp(tested.server.url);
    const page = await tested.loggedIn(username, '/');
    await page.getByRole('link', { name: 'OAuth clients' }).click();
    await page.getByRole('heading', { name: 'Your clients' }).waitFor();
    await page.getByText('No OAuth clients yet.').waitFor();
    assert.deepEqual(await seriousA11yViolations(page), [], 'the clients page');
    assert.ok(await fitsPhoneWidth(page), 'the clients page fits a phone');

    const mobile = await createClient(page, 'Simple Auth mobile app', 'Phone app');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.getByRole('button', { name: 'Copy client secret' }).click();
    await page.getByText('Copied.').waitFor();
    // (Bounded: a clipboard read must not hang the file if the browser withholds it.)
    const pasted = await Promise.race([page.evaluate('navigator.clipboard.readText()'), new Promise((resolve) => setTimeout(resolve, 10_000, 'no answer from the clipboard').unref())]);
    assert.equal(pasted, mobile.secret);
    assert.deepEqual(await seriousA11yViolations(page), [], 'the secret shown once');
    assert.ok(await fitsPhoneWidth(page), 'the secret fits a phone');
    await page.getByRole('button', { name: 'Done' }).click();
    const server2 = await createClient(page, 'Two-Legged server', 'Back-end');
    assert.ok(!/client ID alone/.test((await server2.shown.textContent()) ?? ''));
    await page.getByRole('button', { name: 'Done' }).click();
    const web = await createClient(page, 'Simple Auth web app', 'Setup page', 'https://app.example.com/setup');
    assert.match((await web.shown.textContent()) ?? '', /uses its client ID alone in the browser/);

    // The list, as the API holds it: each with its kind and ID.
    const row = (name: string) => page.getByRole('row', { name: new RegExp(name) });
    assert.match((await row('Phone app').textContent()) ?? '', new RegExp(`Simple Auth mobile app${mobile.id}`));
    assert.match((await row('Back-end').textContent()) ?? '', new RegExp(`Two-Legged server${server2.id}`));
    assert.match((await row('Setup page').textContent()) ?? '', new RegExp(`Simple Auth web app${web.id}`));
    const held = (await raw(`${tested.server.url}/v1/clients`, { token })).json.clients as Array<{ id: string; type: string; scope: string | null; redirect_uri?: string }>;
    const byId = new Map(held.map((c) => [c.id, c]));
    assert.deepEqual([byId.get(mobile.id)?.type, byId.get(mobile.id)?.scope], ['installed', 'customers:create']);
    assert.deepEqual([byId.get(server2.id)?.type, byId.get(server2.id)?.scope], ['installed', null]);
    assert.deepEqual([byId.get(web.id)?.type, byId.get(web.id)?.scope, byId.get(web.id)?.redirect_uri], ['web', 'customers:create', 'https://app.example.com/setup']);

    // The two-legged secret shown works: a client_credentials grant acts as the user.
    const granted = await clientCredentials(server2.id, server2.secret);
    assert.equal(granted.status, 200, granted.text);
    assert.equal((await raw(`${tested.server.url}/v1/user`, { token: granted.json.access_token })).json.username, username);

    // Reloading shows the list again, never a secret.
    await page.reload();
    await row('Back-end').waitFor();
    const html = await page.content();
    for (const c of [mobile, server2, web]) assert.ok(!html.includes(c.secret), 'a secret is shown once only');
    assert.equal(await page.getByRole('region', { name: 'Client secret' }).count(), 0);

    // Rename (PUT); a blank name is refused in words.
    await page.getByRole('button', { name: 'Rename Back-end' }).click();
    await page.getByLabel('New name').fill('   ');
    await page.getByRole('button', { name: 'Save' }).click();
    await row('Back-end').getByRole('alert').waitFor();
    assert.match((await row('Back-end').getByRole('alert').textContent()) ?? '', /name is required/);
    await page.getByLabel('New name').fill('Fleet back-end');
    await page.getByRole('button', { name: 'Save' }).click();
    await row('Fleet back-end').waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/clients`, { token })).json.clients.find((c: { id: string }) => c.id === server2.id).name, 'Fleet back-end');

    // Delete asks first; cancelling keeps it; confirming revokes its tokens.
    await page.getByRole('button', { name: 'Delete Fleet back-end' }).click();
    await page.getByText('Every token it made is revoked.').waitFor();
    assert.deepEqual(await seriousA11yViolations(page), [], 'the delete confirmation');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Delete Fleet back-end' }).click();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await row('Fleet back-end').waitFor({ state: 'detached' });
    assert.equal((await raw(`${tested.server.url}/v1/clients`, { token })).json.clients.length, 2);
    assert.equal((await raw(`${tested.server.url}/v1/user`, { token: granted.json.access_token })).status, 401, "the deleted client's token is revoked");
    await page.context().close();
  });

  test("a product's clients: the same page under the product; its two-legged client acts for the product; a refused redirect URI is said in words", async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Client Fleet');
    const page = await tested.loggedIn(username, `/products/${product.slug}`);
    await page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('heading', { name: 'OAuth clients' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/products/${product.slug}/clients`);

    await page.getByLabel('Simple Auth web app').check();
    await page.getByLabel('Name', { exact: true }).fill('Web setup');
    await page.getByLabel('Redirect URI').fill('https://app.example.com/setup#step');
    await page.getByRole('button', { name: 'Create client' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /fragment/);
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/clients`, { token })).json.clients.length, 0);

    const twoLegged = await createClient(page, 'Two-Legged server', 'Fleet server');
    const granted = await clientCredentials(twoLegged.id, twoLegged.secret);
    assert.equal(granted.status, 200, granted.text);
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}`, { token: granted.json.access_token })).json.product.slug, product.slug);
    const listed = (await raw(`${tested.server.url}/v1/products/${product.id}/clients`, { token })).json.clients;
    assert.deepEqual(listed.map((c: { id: string; product_id: number }) => [c.id, c.product_id]), [[twoLegged.id, product.id]]);
    // Not the user's own.
    assert.equal((await raw(`${tested.server.url}/v1/clients`, { token })).json.clients.length, 0);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('row', { name: /Fleet server/ }).waitFor();
    assert.deepEqual(await seriousA11yViolations(page), [], "the product's clients page");
    assert.ok(await fitsPhoneWidth(page), "the product's clients page fits a phone");
    await page.context().close();
  });
});
