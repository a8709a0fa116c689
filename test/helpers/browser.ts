import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer, type TestServerOptions } from './server.js';
import { PASSWORD } from './fixtures.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Debian's Chromium, headless, driven by playwright-core (.ci/run installs the `chromium`
 * package when it is missing). One browser per test file; a context of its own per test, so that
 * sessions do not meet.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

export async function newPage(browser: Browser, url: string): Promise<Page> {
  const context = await browser.newContext({ baseURL: url });
  return context.newPage();
}

/**
 * axe-core's check of the page as it stands: the violations of impact serious or critical, as
 * lines ("rule: target"), to be empty.
 */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  // Evaluated by the browser's debugger, not added as a <script>: the console's
  // Content-Security-Policy refuses inline scripts, a test's too.
  await page.evaluate(AXE);
  const found = await page.evaluate('axe.run(document, { resultTypes: ["violations"] })') as { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }> };
  return found.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${JSON.stringify(n.target)}`));
}

/** Whether the page fits a phone's width (375 CSS pixels) without scrolling sideways. */
export async function fitsPhoneWidth(page: Page): Promise<boolean> {
  const before = page.viewportSize();
  await page.setViewportSize({ width: 375, height: 740 });
  const wide = await page.evaluate('document.documentElement.scrollWidth') as number;
  if (before) await page.setViewportSize(before);
  return wide <= 375;
}

/** Records the page's Content-Security-Policy violations, from the first script on. */
export async function recordViolations(page: Page): Promise<() => Promise<string[]>> {
  // A string: the tests are compiled without the DOM's types.
  await page.addInitScript(`
    const seen = globalThis.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => seen.push(e.effectiveDirective + ' blocked ' + (e.blockedURI || 'inline') + ' (' + e.sourceFile + ':' + e.lineNumber + ')'));
  `);
  const logged: string[] = [];
  page.on('console', (m) => { if (/Content.Security.Policy/i.test(m.text())) logged.push(m.text()); });
  page.on('pageerror', (e) => logged.push(`page error: ${e.message}`));
  return async () => [...(await page.evaluate('globalThis.cspViolations') as string[]), ...logged];
}

/** Logs in on the console's form at `path`: a page asked for before logging in is the page shown after. */
export async function logIn(page: Page, username: string, password = PASSWORD, path = '/'): Promise<void> {
  await page.goto(path);
  await page.getByLabel('E-mail').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** A console test file's server and browser, started before its tests and closed after them. */
export interface ConsoleUnderTest {
  readonly server: TestServer;
  readonly browser: Browser;
  /** A page of a context of its own, logged in at `path`. */
  loggedIn(username: string, path?: string, password?: string): Promise<Page>;
}

/** Registers the file's before/after hooks: one server and one browser for all its tests. */
export function consoleUnderTest(options: TestServerOptions = {}): ConsoleUnderTest {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  before(async () => {
    // Both are kept even when one fails to start, so that `after` closes the other (a server
    // left open would keep the test process alive).
    const [s, b] = await Promise.allSettled([startTestServer(options), launch()]);
    if (s.status === 'fulfilled') server = s.value;
    if (b.status === 'fulfilled') browser = b.value;
    if (s.status === 'rejected') throw s.reason;
    if (b.status === 'rejected') throw b.reason;
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  const started = <T>(thing: T | undefined): T => {
    if (thing === undefined) throw new Error('the console under test has not started (used outside a test?)');
    return thing;
  };
  return {
    get server() { return started(server); },
    get browser() { return started(browser); },
    async loggedIn(username, path = '/', password = PASSWORD) {
      const page = await newPage(started(browser), started(server).url);
      await logIn(page, username, password, path);
      return page;
    },
  };
}
