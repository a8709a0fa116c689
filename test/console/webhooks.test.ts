import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { raw } from '../helpers/http.js';
import { newProduct, PASSWORD, signUp } from '../helpers/fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startReceiver, type Receiver, type Received } from '../helpers/receiver.js';
import { consoleUnderTest, fitsPhoneWidth, logIn, newPage, recordViolations, seriousA11yViolations } from '../helpers/browser.js';

/**
 * The console's Integrations (docs/console.md): a product's webhooks and the account's own, in
 * Chromium, delivering to a real receiver on a loopback port (allowed by WEBHOOK_ALLOW_PRIVATE):
 * the form and its preview, the secret shown once, test events, the delivery log with resends
 * and replay, enabling and disabling, rotating the secret, editing and deleting.
 */
const tested = consoleUnderTest({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
let receiver: Receiver;
before(async () => { receiver = await startReceiver(); });
after(async () => { await receiver.close(); });

/** The request the receiver got with this webhook-id (a delivery's every attempt has the same). */
const arrival = (id: string, after = 0): Promise<Received> =>
  eventually(() => receiver.received.slice(after).find((r) => r.headers['webhook-id'] === id), 15_000, `the delivery ${id} at the receiver`);
const headersOf = (h: IncomingHttpHeaders): Record<string, string> => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));

/** A datetime-local value, in the browser's zone (the test's: both run here). */
function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** The secret a "Signing secret" region shows, once. */
async function shownSecret(page: Page): Promise<string> {
  const region = page.getByRole('region', { name: 'Signing secret' });
  await region.waitFor();
  assert.match((await region.textContent()) ?? '', /will not be shown again/);
  const secret = (await region.locator('code').last().textContent()) ?? '';
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  return secret;
}

async function accessible(page: Page, what: string): Promise<void> {
  assert.deepEqual(await seriousA11yViolations(page), [], what);
  assert.ok(await fitsPhoneWidth(page), `${what} fits a phone`);
}

describe('Integrations', { concurrency: true }, () => {
  test("a product's webhook: created with a preview, its secret shown once; test event, delivery log, resend, disable and enable, rotation, replay, edit and delete", async () => {
    const { username, token } = await signUp(tested.server.url);
    const product = await newProduct(tested.server.url, token, 'Hooked Fleet');
    const page = await newPage(tested.browser, tested.server.url);
    // From the first script on: the console's Content-Security-Policy holds on every page of the feature.
    const violations = await recordViolations(page);
    await logIn(page, username, PASSWORD, `/products/${product.slug}`);
    await page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Integrations', exact: true }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/products/${product.slug}/integrations`);
    await page.getByText('No webhooks yet.').waitFor();
    await accessible(page, 'the empty list');

    // The form: Particle's fields; a JSON template, a header, a query parameter, HTTP Basic.
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByRole('heading', { name: 'New webhook' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Receiver');
    await page.getByLabel('Event name prefix').fill('temp');
    await page.getByLabel('URL', { exact: true }).fill(`${receiver.url}/hooks/{{PARTICLE_EVENT_NAME}}`);
    assert.equal(await page.getByLabel('Device', { exact: true }).count(), 0, "a product's webhook takes no device");
    await page.getByRole('radio', { name: 'JSON' }).check();
    await page.getByLabel('JSON template').fill('{"reading": "{{{temp}}}", "device": "{{PARTICLE_DEVICE_ID}}"}');
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 1 name').fill('X-Source');
    await page.getByLabel('Header 1 value').fill('skyport-{{PRODUCT_ID}}');
    await page.getByRole('button', { name: 'Add query parameter' }).click();
    await page.getByLabel('Query parameter 1 name').fill('via');
    await page.getByLabel('Query parameter 1 value').fill('console');
    await page.getByLabel('User name').fill('hooks');
    await page.getByLabel('Password').fill('pw-never-shown');

    // The preview: the request a sample event makes, the password masked; it follows the fields.
    await page.getByLabel('Sample event data').fill('{"temp":21.5}');
    await page.getByRole('button', { name: 'Preview the request' }).click();
    const preview = page.getByRole('region', { name: 'Request preview' });
    await preview.getByText(`POST ${receiver.url}/hooks/temp?via=console`).waitFor();
    const header = (name: string) => preview.getByRole('row', { name: new RegExp(`^${name} `) }).getByRole('cell');
    assert.equal(await header('authorization').textContent(), 'Basic ••••••••');
    assert.equal(await header('x-source').textContent(), `skyport-${product.id}`);
    assert.equal(await header('content-type').textContent(), 'application/json');
    assert.match((await header('webhook-signature').textContent()) ?? '', /signing secret/);
    const previewed = JSON.parse((await preview.locator('pre').textContent()) ?? '');
    assert.deepEqual([previewed.reading, previewed.event, previewed.data, previewed.productID], ['21.5', 'temp', '{"temp":21.5}', String(product.id)]);
    assert.ok(!(await page.content()).includes(Buffer.from('hooks:pw-never-shown').toString('base64')), 'the password is not in the page');
    await page.getByLabel('Sample event data').fill('{"temp":30}');
    await preview.locator('pre', { hasText: '"reading":"30"' }).waitFor();
    await accessible(page, 'the form with its preview');

    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('heading', { name: 'Receiver' }).waitFor();
    const secret = await shownSecret(page);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.getByRole('button', { name: 'Copy signing secret' }).click();
    await page.getByText('Copied.').waitFor();
    const pasted = await Promise.race([page.evaluate('navigator.clipboard.readText()'), new Promise((resolve) => setTimeout(resolve, 10_000, 'no answer from the clipboard').unref())]);
    assert.equal(pasted, secret);
    await accessible(page, 'the webhook with its secret shown once');
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByRole('region', { name: 'Signing secret' }).count(), 0);
    const hooks = (await raw(`${tested.server.url}/v1/products/${product.id}/webhooks`, { token })).json as Array<{ id: string; url: string; auth: { username: string }; json: unknown; headers: unknown; query: unknown }>;
    assert.equal(hooks.length, 1);
    const hook = hooks[0]!;
    assert.deepEqual([hook.url, hook.auth, hook.json, hook.headers, hook.query], [
      `${receiver.url}/hooks/{{PARTICLE_EVENT_NAME}}`, { username: 'hooks' }, { reading: '{{{temp}}}', device: '{{PARTICLE_DEVICE_ID}}' }, { 'X-Source': 'skyport-{{PRODUCT_ID}}' }, { via: 'console' },
    ]);
    const webhookPage = `/products/${product.slug}/integrations/${hook.id}`;
    assert.equal(new URL(page.url()).pathname, webhookPage);

    // A test event reaches the receiver, signed with the secret shown.
    await page.getByLabel('Test event data').fill('{"temp":22}');
    await page.getByRole('button', { name: 'Send a test event' }).click();
    const queued = page.getByRole('status').filter({ hasText: 'Test event queued as' });
    await queued.waitFor();
    const testId = (await queued.locator('code').textContent()) ?? '';
    const first = await arrival(testId);
    assert.equal(first.method, 'POST');
    assert.equal(first.url, '/hooks/temp?via=console');
    assert.equal(first.headers.authorization, `Basic ${Buffer.from('hooks:pw-never-shown').toString('base64')}`);
    assert.equal(first.headers['x-source'], `skyport-${product.id}`);
    const payload = new Webhook(secret).verify(first.body, headersOf(first.headers)) as Record<string, string>;
    assert.deepEqual([payload.reading, payload.event, payload.data, payload.device], ['22', 'temp', '{"temp":22}', 'api']);

    // The delivery log: the delivery and its attempt.
    const delivery = (id: string) => page.getByRole('article').filter({ hasText: id });
    const attempt = delivery(testId).getByRole('row').filter({ hasText: 'delivered' });
    await attempt.waitFor();
    assert.match((await attempt.textContent()) ?? '', /^1.+delivered200\d+ msok$/);
    await accessible(page, 'the delivery log');

    // Resend: a new delivery of the same event, at the receiver again.
    const before = receiver.received.length;
    await delivery(testId).getByRole('button', { name: `Resend delivery ${testId}` }).click();
    const resent = delivery(testId).getByRole('status').filter({ hasText: 'Resent as' });
    await resent.waitFor();
    const resendId = (await resent.locator('code').textContent()) ?? '';
    assert.notEqual(resendId, testId);
    const again = await arrival(resendId, before);
    assert.deepEqual(new Webhook(secret).verify(again.body, headersOf(again.headers)), payload);
    await delivery(resendId).filter({ hasText: `sends ${testId} again` }).getByRole('row').filter({ hasText: 'delivered' }).waitFor();

    // Disable: a test event is refused in words; enable again.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'Disabled: deliveries wait.' }).waitFor();
    await page.getByRole('definition').filter({ hasText: /^Disabled$/ }).waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/webhooks/${hook.id}`, { token })).json.disabled, true);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    const refused = page.getByRole('form', { name: 'Send a test event' }).getByRole('alert');
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? '', /The webhook is disabled: enable it/);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('definition').filter({ hasText: /^Enabled$/ }).waitFor();
    assert.equal((await raw(`${tested.server.url}/v1/products/${product.id}/webhooks/${hook.id}`, { token })).json.disabled, false);

    // Rotate: asked first; the new secret shown once; deliveries carry both signatures for a while.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('button', { name: 'Yes, make a new secret' }).click();
    const rotated = await shownSecret(page);
    assert.notEqual(rotated, secret);
    await page.getByRole('region', { name: 'Signing secret' }).getByText(/The old one still signs deliveries until/).waitFor();
    await page.getByRole('button', { name: 'Done' }).click();

    // Replay the last hour: the test event (resends are not replayed), signed with both secrets.
    const from = localInput(new Date(Date.now() - 3600_000));
    const to = localInput(new Date(Date.now() + 3600_000));
    await page.getByLabel('From').fill(from);
    await page.getByLabel('To', { exact: true }).fill(to);
    const beforeReplay = receiver.received.length;
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Replayed 1 delivery.' }).waitFor();
    const replayed = await eventually(() => receiver.received.slice(beforeReplay).find((r) => r.body === first.body || JSON.parse(r.body).data === '{"temp":22}'), 15_000, 'the replayed delivery');
    assert.notEqual(replayed.headers['webhook-id'], testId, 'a new delivery');
    assert.equal((replayed.headers['webhook-signature'] as string).split(' ').length, 2, 'signed with the new secret and the old');
    assert.deepEqual(new Webhook(rotated).verify(replayed.body, headersOf(replayed.headers)), payload);
    assert.deepEqual(new Webhook(secret).verify(replayed.body, headersOf(replayed.headers)), payload);
    await page.getByText('3 delivered, 0 failed, 0 skipped, 0 pending').waitFor({ timeout: 15_000 });

    // The list: what it takes, where it sends, its state and its counts.
    await page.getByRole('link', { name: 'All integrations' }).click();
    const row = page.getByRole('row', { name: /Receiver/ });
    await row.getByText('3 delivered, 0 failed, 0 skipped, 0 pending').waitFor();
    assert.match((await row.textContent()) ?? '', new RegExp(`POST ${receiver.url.replace(/\./g, '\\.')}/hooks/\\{\\{PARTICLE_EVENT_NAME\\}\\}Enabled`));
    await accessible(page, 'the list');

    // Edit: the form holds the webhook; a blank password keeps the stored one.
    await row.getByRole('link', { name: 'Receiver' }).click();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit Receiver' }).waitFor();
    assert.equal(await page.getByLabel('Event name prefix').inputValue(), 'temp');
    assert.equal(await page.getByLabel('Header 1 name').inputValue(), 'X-Source');
    assert.equal(await page.getByLabel('Password').inputValue(), '', 'the password is never shown');
    await accessible(page, 'the edit form');
    await page.getByLabel('Name', { exact: true }).fill('Receiver 2');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Receiver 2' }).waitFor();
    const beforeEdit = receiver.received.length;
    await page.getByRole('button', { name: 'Send a test event' }).click();
    const edited = await arrival((await queued.locator('code').textContent()) ?? '', beforeEdit);
    assert.equal(edited.headers.authorization, first.headers.authorization, 'the password was kept');

    // Delete, after a confirmation.
    await page.getByRole('button', { name: 'Delete Receiver 2' }).click();
    await page.getByText('Its delivery log goes with it').waitFor();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await page.getByText('No webhooks yet.').waitFor();
    assert.deepEqual((await raw(`${tested.server.url}/v1/products/${product.id}/webhooks`, { token })).json, []);
    assert.deepEqual(await violations(), [], 'no Content-Security-Policy violation, no page error');
    await page.context().close();
  });

  test("the account's own webhooks: in the header; refusals in words; a device by name; the delivery log a page at a time", async () => {
    const { username, token } = await signUp(tested.server.url);
    const page = await tested.loggedIn(username, '/');
    await page.locator('header').getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Your webhooks' }).waitFor();
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('Event name prefix').fill('acct');
    await page.getByLabel('URL', { exact: true }).fill('http://10.1.2.3/hooks');
    await page.getByLabel('Device', { exact: true }).fill('porch-lamp');
    await page.getByRole('button', { name: 'Preview the request' }).click();
    const alert = page.getByRole('form', { name: 'New webhook' }).getByRole('alert');
    await alert.filter({ hasText: 'you have no device named "porch-lamp"' }).waitFor();
    await page.getByLabel('Device', { exact: true }).fill('');
    const preview = page.getByRole('region', { name: 'Request preview' });
    await preview.getByText('POST http://10.1.2.3/hooks').waitFor();
    // Particle's default fields, as a form.
    assert.match((await preview.locator('pre').textContent()) ?? '', /^event=acct&data=%7B%22temp%22%3A21\.5%7D&published_at=.+&coreid=[0-9a-f]{24}$/);

    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 1 value').fill('orphan');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    // Said by the form itself, before asking the API (and by the preview, which cannot be made either).
    await alert.filter({ hasText: 'Header 1 has a value but no name.' }).first().waitFor();
    await page.getByRole('button', { name: 'Remove header 1' }).click();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const refusal = alert.filter({ hasText: /private/ });
    await refusal.waitFor();
    assert.match((await refusal.textContent()) ?? '', /^url: 10\.1\.2\.3 is a loopback, private, link-local or metadata address/, 'the API refusal, in its words');
    await accessible(page, 'a refusal');
    assert.deepEqual((await raw(`${tested.server.url}/v1/webhooks`, { token })).json, []);

    await page.getByLabel('URL', { exact: true }).fill(`${receiver.url}/mine`);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await shownSecret(page);
    const [mine] = (await raw(`${tested.server.url}/v1/webhooks`, { token })).json as Array<{ id: string }>;
    assert.ok(mine);
    assert.equal(new URL(page.url()).pathname, `/integrations/${mine.id}`);

    // Twelve deliveries: ten on the first page, two on the next.
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await raw(`${tested.server.url}/v1/webhooks/${mine.id}/test`, { method: 'POST', token, json: { data: `n${i}` } });
      assert.equal(r.status, 200, r.text);
      ids.push(r.json.delivery_id as string);
    }
    await Promise.all(ids.map((id) => arrival(id)));
    const log = page.getByRole('list', { name: 'Deliveries' });
    await eventually(async () => ((await log.getByRole('article').count()) === 10 && (await log.getByText(ids[11]!).count()) === 1 ? true : undefined), 15_000, 'the newest ten');
    const pager = page.getByRole('navigation', { name: 'Pages of the delivery log' });
    assert.equal(await pager.getByRole('button', { name: 'Newer' }).isDisabled(), true);
    await pager.getByRole('button', { name: 'Older' }).click();
    await pager.getByText('Page 2').waitFor();
    await log.getByText(ids[0]!).waitFor();
    assert.equal(await log.getByRole('article').count(), 2);
    assert.equal(await pager.getByRole('button', { name: 'Older' }).isDisabled(), true);
    await accessible(page, 'the second page of the log');
    await pager.getByRole('button', { name: 'Newer' }).click();
    await log.getByText(ids[11]!).waitFor();
    await page.context().close();
  });
});
