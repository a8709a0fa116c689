// The web console's first load (docs/benchmarks.md, "Web console"):
//   npm run build && npx tsx bench/console.ts [--runs 15]
// Bytes: the gzipped JavaScript and CSS that the first page loads. Time: from navigation to the
// log-in form drawn, in headless Chromium (a fresh context each run: nothing cached), beside the
// time to load the bare OpenAPI JSON from the same server in the same run; the ratio is the figure.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { gitCommit, onCleanup, option, percentile, ROOT, round2, runBenchmark, startSkyport } from './harness.js';

runBenchmark('console', 300, async () => {
  const runs = Number(option(process.argv.slice(2), '--runs') ?? 15);
  // The first page loads what index.html names; the rest (the configuration forms) comes later.
  const built = join(ROOT, 'dist', 'console');
  const first = [...readFileSync(join(built, 'index.html'), 'utf8').matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((m) => m[1] as string);
  const all = readdirSync(join(built, 'assets')).filter((f) => f.endsWith('.js')).map((f) => `assets/${f}`);
  const gzOf = (files: string[], ext: string) => files.filter((f) => f.endsWith(ext)).reduce((n, f) => n + gzipSync(readFileSync(join(built, f))).length, 0);

  const server = await startSkyport('embedded', { build: ROOT });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  onCleanup(() => browser.close());

  const timed = async (work: (page: import('playwright-core').Page) => Promise<unknown>) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const started = performance.now();
    await work(page);
    const ms = performance.now() - started;
    await context.close();
    return ms;
  };
  const consoleMs: number[] = [];
  const openapiMs: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    // Interleaved, so that both see the same machine; the first two are warm-up.
    const c = await timed(async (page) => {
      await page.goto(`${server.url}/`);
      await page.getByRole('heading', { name: 'Log in' }).waitFor();
    });
    const o = await timed((page) => page.goto(`${server.url}/v1/openapi.json`, { waitUntil: 'load' }));
    if (i >= 2) { consoleMs.push(c); openapiMs.push(o); }
  }
  consoleMs.sort((a, b) => a - b);
  openapiMs.sort((a, b) => a - b);
  const median = (xs: number[]) => round2(percentile(xs, 50));
  console.log(JSON.stringify({
    commit: gitCommit(), runs,
    first_load_gzip_bytes: { js: gzOf(first, '.js'), css: gzOf(first, '.css') },
    all_javascript_gzip_bytes: gzOf(all, '.js'),
    console_first_page_ms: median(consoleMs),
    openapi_json_ms: median(openapiMs),
    ratio: round2(median(consoleMs) / median(openapiMs)),
  }, null, 2));
});
