import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { raw } from '../helpers/http.js';
import { PASSWORD } from '../helpers/fixtures.js';
import { spawnSkyport } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { consoleUnderTest, newPage } from '../helpers/browser.js';

/**
 * A newcomer's first hour, in the console alone: sign up, create a product, add a device, start
 * the simulated device with the command the console gives, see it online, call its function,
 * change a fleet setting and watch the device take it, roll the change back.
 */
const tested = consoleUnderTest();

test('from sign-up to a rolled-back fleet setting, with a simulated device, in the console alone', { timeout: 120_000 }, async () => {
  const page = await newPage(tested.browser, tested.server.url);
  const dir = mkdtempSync(join(tmpdir(), 'skyport-newcomer-'));
  let sim: ReturnType<typeof spawnSkyport> | undefined;
  try {
    await page.goto('/');
    await page.getByRole('button', { name: 'New here? Create an account' }).click();
    await page.getByLabel('E-mail').fill(`newcomer-${randomBytes(4).toString('hex')}@example.com`);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();

    await page.getByRole('button', { name: 'New product' }).click();
    await page.getByLabel('Name').fill('First Fleet');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('link', { name: 'First Fleet' }).click();
    await page.getByRole('heading', { name: 'First Fleet' }).waitFor();

    await page.getByRole('button', { name: 'Add devices' }).click();
    await page.getByLabel('How many').fill('1');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const command = (await page.getByLabel('Command that starts a simulated device').textContent()) ?? '';
    // As a newcomer would paste it into a shell (npx skyport is this checkout's bin).
    const [write, run] = command.split(' && ') as [string, string];
    assert.match(run, /^npx skyport sim --credentials \S+\.csv /, command);
    execFileSync('sh', ['-c', write], { cwd: dir });
    sim = spawnSkyport(run.split(' ').slice(2).map((a) => (a.endsWith('.csv') ? join(dir, a) : a)));
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link') }).first();
    await row.getByText('online').waitFor({ timeout: 20_000 });

    await row.getByRole('link').click();
    await page.getByText(/Declared: led, echo/).waitFor();
    await page.getByRole('combobox', { name: 'Function' }).fill('echo');
    await page.getByRole('textbox', { name: 'Argument' }).fill('hi');
    await page.getByRole('button', { name: 'Call' }).click();
    await page.getByRole('status').getByText('echo returned 2').waitFor();
    const deviceUrl = page.url();

    await page.getByRole('navigation', { name: 'Product' }).getByRole('link', { name: 'Configuration' }).click();
    await page.locator('select#root_rgb_type').selectOption('off');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/Saved as version 1/).waitFor();
    // The device's acknowledgement: the rollout shows it in sync, and so does its own page.
    await page.getByText(/Of 1 device\(s\): 1 in sync, 0 pending/).waitFor();
    await page.goto(`${new URL(deviceUrl).pathname}/config`);
    await page.getByRole('row', { name: /^RGB LED.*In sync/ }).waitFor();

    await page.goto(`${new URL(deviceUrl).pathname.replace(/\/devices\/.*/, '')}/config/history`);
    await page.getByRole('button', { name: 'Back to the defaults…' }).click();
    await page.getByRole('button', { name: "Clear the fleet's values" }).click();
    await page.getByText(/The fleet's values are cleared/).waitFor();
    const id = new URL(deviceUrl).pathname.split('/').pop()!;
    const token = JSON.parse((await page.evaluate("sessionStorage.getItem('skyport.session')")) as string).token as string;
    const slug = new URL(deviceUrl).pathname.split('/')[2]!;
    // The device took the default back and acknowledged it.
    await eventually(async () => {
      const state = (await raw(`${tested.server.url}/v1/products/${slug}/config/${id}`, { token })).json;
      return state.configuration?.current?.rgb?.type === 'particle' && Object.keys(state.configuration?.pending ?? {}).length === 0 ? true : undefined;
    });
  } finally {
    sim?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await page.context().close();
  }
});
