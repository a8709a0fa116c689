import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { email, manualClock } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { enableMfa, PASSWORD, signUp } from '../helpers/fixtures.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, seriousA11yViolations } from '../helpers/browser.js';
import { totpNow } from '../../src/domain/totp.js';

/** The web console in Chromium: signing up, logging in (with MFA), products, logging out. */
// The cloud's time, moved by the tests (one-time codes); no device is connected to mind it.
const clock = manualClock(new Date());
const tested = consoleUnderTest({ clock });

/** The console's token, as the page keeps it (sessionStorage, in the page's own context). */
async function tokenOf(page: Page): Promise<string | null> {
  const kept = await page.evaluate("sessionStorage.getItem('skyport.session')") as string | null;
  return kept ? (JSON.parse(kept) as { token: string }).token : null;
}

test('sign up, create a product, see it listed; log out revokes the console token', async () => {
  const page = await newPage(tested.browser, tested.server.url);
  const username = email('console');
  await page.goto('/');
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  assert.deepEqual(await seriousA11yViolations(page), [], 'the log-in page');
  await page.getByRole('button', { name: 'New here? Create an account' }).click();
  await page.getByLabel('E-mail').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByText('No products yet').waitFor();
  assert.deepEqual(await seriousA11yViolations(page), [], 'the products page');
  assert.equal(await page.locator('header .who').textContent(), username);

  await page.getByRole('button', { name: 'New product' }).click();
  await page.getByLabel('Name').fill('Console Fleet');
  await page.getByLabel('Description').fill('made in the browser');
  await page.getByRole('button', { name: 'Create' }).click();
  const row = page.getByRole('row', { name: /Console Fleet/ });
  await row.waitFor();
  assert.match((await row.textContent()) ?? '', /console-fleet/);
  assert.ok(await fitsPhoneWidth(page), 'the products page fits a phone');

  // What the page showed is what the API holds.
  const token = await tokenOf(page);
  assert.ok(token);
  const listed = await raw(`${tested.server.url}/v1/user/products`, { token });
  assert.deepEqual(listed.json.products.map((p: { name: string }) => p.name), ['Console Fleet']);
  // The console's token is short-lived and made by its own public client.
  const current = await raw(`${tested.server.url}/v1/access_tokens/current`, { token });
  assert.equal(current.json.client_id, 'skyport-console');
  assert.equal(Date.parse(current.json.expires_at) - clock.nowMs(), 900_000);

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  assert.equal(await tokenOf(page), null);
  assert.equal((await raw(`${tested.server.url}/v1/access_tokens/current`, { token })).status, 401, 'revoked at log-out');
  await page.context().close();
});

test('a wrong password is said in words, and the page stays usable', async () => {
  const { username } = await signUp(tested.server.url);
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username, 'not the password');
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match((await alert.textContent()) ?? '', /password|credentials|invalid/i);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  await page.context().close();
});

test('an account with MFA on logs in with its one-time code; a wrong code is refused', async () => {
  const { username, token } = await signUp(tested.server.url);
  const secret = await enableMfa(tested.server.url, token, () => clock.now());
  // A login takes a code of a later step than the enrolment's.
  clock.advance(30_000);
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username);
  await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
  assert.deepEqual(await seriousA11yViolations(page), [], 'the MFA step');
  await page.getByLabel('Code').fill(totpNow(secret, clock.now()) === '000000' ? '111111' : '000000');
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('alert').waitFor();
  await page.getByLabel('Code').fill(totpNow(secret, clock.now()));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  await page.context().close();
});

test('a session the cloud ended goes back to sign-in, saying so', async () => {
  const { username } = await signUp(tested.server.url);
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, username);
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  const token = await tokenOf(page);
  assert.equal((await raw(`${tested.server.url}/v1/access_tokens/current`, { method: 'DELETE', token: token! })).status, 200);
  await page.reload();
  await page.getByText('Your session ended').waitFor();
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.context().close();
});

test('a page path opens the console; API paths keep their JSON answers', async () => {
  const page = await raw(`${tested.server.url}/products/some-fleet`, { headers: { accept: 'text/html' } });
  assert.equal(page.status, 200);
  assert.match(page.text, /<div id="root">/);
  const api = await raw(`${tested.server.url}/v1/no-such-thing`, { headers: { accept: 'text/html' } });
  assert.equal(api.status, 404);
  assert.equal(api.json.error, 'not_found');
});
