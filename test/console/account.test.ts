import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { manualClock } from '../helpers/server.js';
import { basic, raw } from '../helpers/http.js';
import { enableMfa, PASSWORD, signUp } from '../helpers/fixtures.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, seriousA11yViolations } from '../helpers/browser.js';
import { eventually } from '../helpers/eventually.js';
import { totpNow } from '../../src/domain/totp.js';

/**
 * The console's session (renewed while open, revoked at log-out), its temporary API token, and
 * the account page: two-step verification, access tokens, the security log.
 */
// The cloud's time: moved only by the tests at the end of the file, one at a time (one-time
// codes, token expiry), after the tests that run side by side.
const clock = manualClock(new Date());
const tested = consoleUnderTest({ clock });

interface Kept { token: string; refreshToken?: string }
/** The console's session as the page keeps it (sessionStorage, in the page's own context). */
async function keptOf(page: Page): Promise<Kept | null> {
  const kept = await page.evaluate("sessionStorage.getItem('skyport.session')") as string | null;
  return kept ? (JSON.parse(kept) as Kept) : null;
}
const live = async (token: string) => (await raw(`${tested.server.url}/v1/access_tokens/current`, { token })).status === 200;

/** A new account logged in on the console, at `path`. */
async function consoleUser(path = '/') {
  const account = await signUp(tested.server.url);
  const page = await newPage(tested.browser, tested.server.url);
  await logIn(page, account.username, PASSWORD, path);
  await page.locator('header').getByRole('link', { name: 'Account' }).waitFor();
  return { ...account, page };
}

/** Takes an API token from the header and answers what the page showed. */
async function takeApiToken(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'API token' }).click();
  await page.getByRole('button', { name: 'Create token' }).click();
  const field = page.getByLabel('Your token');
  await field.waitFor();
  return field.inputValue();
}

describe('side by side', { concurrency: true }, () => {
  test('an API token from the header works, is shown once, and log-out revokes it with the console token', async () => {
    const { page, username } = await consoleUser();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    const apiToken = await takeApiToken(page);
    const panel = await page.locator('#api-token').textContent() ?? '';
    assert.match(panel, /ends with this console session/);
    assert.match(panel, /will not be shown again/);
    assert.equal((await raw(`${tested.server.url}/v1/user`, { token: apiToken })).json.username, username);
    await page.getByRole('button', { name: 'Copy token' }).click();
    await page.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), apiToken);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'API token' }).click();
    assert.equal(await page.getByLabel('Your token').count(), 0, 'not shown again');

    const kept = (await keptOf(page))!;
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    assert.equal(await live(apiToken), false, 'the API token ends with the session');
    assert.equal(await live(kept.token), false, 'the console token is revoked');
    const refresh = await raw(`${tested.server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic('skyport-console', 'skyport-console') }, form: { grant_type: 'refresh_token', refresh_token: kept.refreshToken! } });
    assert.equal(refresh.json.error, 'invalid_grant', 'the refresh token is revoked');
    await page.context().close();
  });

  test('closing the tab revokes the API token; the session itself is the cloud\'s to end', async () => {
    const { page } = await consoleUser();
    const apiToken = await takeApiToken(page);
    const kept = (await keptOf(page))!;
    assert.equal(await live(apiToken), true);
    await page.close({ runBeforeUnload: true });
    await eventually(async () => ((await live(apiToken)) ? undefined : true), 5000, 'the API token revoked on closing');
    assert.equal(await live(kept.token), true);
    await raw(`${tested.server.url}/v1/access_tokens/current`, { method: 'DELETE', token: kept.token });
  });

  test('the account page lists the tokens and revokes one after confirming; a failed revocation is said in words', async () => {
    const { page, token: cliToken, newToken } = await consoleUser('/account');
    const apiToken = await takeApiToken(page);
    await page.getByRole('button', { name: 'Done' }).click();
    const other = await newToken();
    // Back to the page within the console (a reload would be the tab closing, and end the API token).
    await page.getByRole('link', { name: 'Skyport' }).click();
    await page.getByRole('link', { name: 'Account' }).click();
    const table = page.getByRole('table').first();
    await table.getByText('API token of this console').waitFor();
    await table.getByText('This console', { exact: true }).waitFor();
    assert.equal(await table.getByText('Sign-in', { exact: true }).count(), 2);
    const html = await page.content();
    for (const secret of [apiToken, cliToken, other]) assert.ok(!html.includes(secret), 'no token value on the page');

    // Revoking asks first; Cancel leaves the token.
    const listed = await raw(`${tested.server.url}/v1/user/access_tokens`, { token: apiToken });
    const idOf = (kind: (t: { temporary: boolean; current: boolean }) => boolean) => listed.json.tokens.find(kind).id as string;
    const tempId = idOf((t) => t.temporary);
    await page.getByRole('button', { name: `Revoke API token of this console token ${tempId}` }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await live(apiToken), true);
    await page.getByRole('button', { name: `Revoke API token of this console token ${tempId}` }).click();
    await page.getByRole('button', { name: `Confirm: revoke API token of this console token ${tempId}` }).click();
    await table.getByText('API token of this console').waitFor({ state: 'detached' });
    assert.equal(await live(apiToken), false);

    // A token revoked elsewhere meanwhile: the page says so.
    const sessionToken = (await keptOf(page))!.token;
    const ids = (await raw(`${tested.server.url}/v1/user/access_tokens`, { token: sessionToken })).json.tokens as Array<{ id: string; current: boolean }>;
    const cliId = ids.filter((t) => !t.current)[0]!.id;
    await page.getByRole('button', { name: `Revoke Sign-in token ${cliId}` }).click();
    await raw(`${tested.server.url}/v1/user/access_tokens/${cliId}`, { method: 'DELETE', token: sessionToken });
    await page.getByRole('button', { name: `Confirm: revoke Sign-in token ${cliId}` }).click();
    assert.match(await page.getByRole('alert').textContent() ?? '', /No such token/);
    await page.context().close();
  });

  test('the security log pages through the account\'s events; the page passes axe and fits a phone', async () => {
    const { page, newToken } = await consoleUser();
    for (let i = 0; i < 6; i++) await newToken(); // a login and a token each: more than a page of ten
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Security log' }).waitFor();
    const pager = page.getByRole('navigation', { name: 'Security log pages' });
    await pager.getByText('Page 1 of 2').waitFor();
    const log = page.getByRole('table', { name: 'Security events' });
    assert.equal(await log.locator('tbody tr').count(), 10);
    assert.equal(await pager.getByRole('button', { name: 'Previous' }).isDisabled(), true);
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByText('Page 2 of 2').waitFor();
    assert.ok(await log.locator('tbody tr').count() >= 4);
    assert.match(await log.textContent() ?? '', /user\.created|user\.signup|user\.login/);
    assert.equal(await pager.getByRole('button', { name: 'Next' }).isDisabled(), true);
    await pager.getByRole('button', { name: 'Previous' }).click();
    await pager.getByText('Page 1 of 2').waitFor();

    assert.deepEqual(await seriousA11yViolations(page), [], 'the account page');
    assert.ok(await fitsPhoneWidth(page), 'the account page fits a phone');
    await page.getByRole('button', { name: 'API token' }).click();
    assert.ok(await fitsPhoneWidth(page), 'the API token panel fits a phone');
    await page.context().close();
  });

  test('MFA off: a wrong password is refused in words, the right one turns it off', async () => {
    const { page, token, username } = await consoleUser('/account');
    await page.getByRole('button', { name: 'Turn on two-step verification' }).waitFor();
    await enableMfa(tested.server.url, token, () => clock.now());
    await page.reload();
    await page.getByLabel('Current password').fill('not the password');
    await page.getByRole('button', { name: 'Turn off' }).click();
    assert.match(await page.getByRole('alert').textContent() ?? '', /current password is wrong/i);
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Turn off' }).click();
    await page.getByRole('button', { name: 'Turn on two-step verification' }).waitFor();
    const again = await raw(`${tested.server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic('particle', 'particle') }, form: { grant_type: 'password', username, password: PASSWORD } });
    assert.equal(again.status, 200, 'a password alone logs in again');
    await page.context().close();
  });
});

test('MFA on from the page: QR code and key, a wrong code refused, recovery codes shown once; then a login asks for the code', async () => {
  const { page, username } = await consoleUser('/account');
  await page.getByRole('button', { name: 'Turn on two-step verification' }).click();
  await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
  const secret = (await page.locator('code.secret-key').textContent())!.trim();
  assert.match(secret, /^[A-Z2-7]+=*$/);
  assert.deepEqual(await seriousA11yViolations(page), [], 'the enrolment step');
  assert.ok(await fitsPhoneWidth(page), 'the enrolment step fits a phone');
  const right = totpNow(secret, clock.now());
  await page.getByLabel('Six-digit code').fill(right === '000000' ? '111111' : '000000');
  await page.getByRole('button', { name: 'Turn on', exact: true }).click();
  assert.match(await page.getByRole('alert').textContent() ?? '', /one-time password is invalid/i);
  await page.getByLabel('Six-digit code').fill(right);
  await page.getByRole('button', { name: 'Turn on', exact: true }).click();
  const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
  await codes.first().waitFor();
  assert.equal(await codes.count(), 10);
  const recovery = (await codes.first().textContent())!.trim();
  await page.getByText('they will not be shown again').waitFor();
  const download = page.waitForEvent('download');
  await page.getByRole('link', { name: 'Download codes' }).click();
  const file = await (await download).path();
  const { readFile } = await import('node:fs/promises');
  assert.equal((await readFile(file, 'utf8')).split('\n').filter(Boolean).length, 10);
  await page.getByRole('button', { name: 'I have saved them' }).click();
  await page.getByLabel('Current password').waitFor();
  await page.reload();
  await page.getByLabel('Current password').waitFor();
  assert.equal(await page.getByText(recovery).count(), 0, 'the codes are shown once');

  // Log out, and in again: the second step takes the code of the authenticator app.
  await page.getByRole('button', { name: 'Log out' }).click();
  clock.advance(30_000); // a later step than the enrolment's code
  await logIn(page, username);
  await page.getByLabel('Code').fill(totpNow(secret, clock.now()));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  // And a recovery code, once.
  await page.getByRole('button', { name: 'Log out' }).click();
  await logIn(page, username);
  await page.getByLabel('Code').fill(recovery);
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  await page.context().close();
});

test('the console renews its short token before it expires, and the API token lives on with the session', async () => {
  const account = await signUp(tested.server.url);
  const page = await newPage(tested.browser, tested.server.url);
  // The page's timers run on a clock the test moves, as the cloud's.
  await page.clock.install({ time: clock.now() });
  await logIn(page, account.username);
  await page.getByRole('heading', { name: 'Products' }).waitFor();
  const first = (await keptOf(page))!;
  const expiry = Date.parse((await raw(`${tested.server.url}/v1/access_tokens/current`, { token: first.token })).json.expires_at);
  assert.equal(expiry - clock.nowMs(), 900_000, 'a quarter of an hour');
  const apiToken = await takeApiToken(page);

  // Ten minutes on, a third of its life left: the console renews.
  clock.advance(600_000);
  await page.clock.runFor(600_000);
  const second = await eventually(async () => {
    const k = await keptOf(page);
    return k && k.token !== first.token ? k : undefined;
  }, 5000, 'a renewed token');
  assert.notEqual(second.refreshToken, first.refreshToken);
  // Past the first token's expiry: the console goes on with the second, the API token with it.
  clock.advance(400_000);
  await page.clock.runFor(400_000);
  assert.equal(await live(first.token), false);
  assert.equal(await live(second.token), true);
  assert.equal(await live(apiToken), true, 'the renewal carried the API token along');
  await page.getByRole('link', { name: 'Account' }).click();
  await page.getByRole('heading', { name: 'Security log' }).waitFor();
  await page.getByText('token.refreshed').first().waitFor();
  assert.equal(await page.getByText('Your session ended').count(), 0);

  // A session revoked elsewhere: the next renewal is refused and the console goes back to sign-in.
  const now = (await keptOf(page))!;
  await raw(`${tested.server.url}/oauth/revoke`, { method: 'POST', headers: { authorization: basic('skyport-console', 'skyport-console') }, form: { token: now.refreshToken! } });
  clock.advance(600_000);
  await page.clock.runFor(600_000);
  await page.getByText('Your session ended').waitFor();
  assert.equal(await live(apiToken), false);
  await page.context().close();
});
