import { chromium, type Browser, type Page } from 'playwright-core';

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
