#!/usr/bin/env node
// Runs the test suite with node's test runner. Usage:
//   node scripts/run-tests.mjs [--all] [--unit | --embedded-only] [file-filter...]
//
// First it compiles the tests (tsconfig.test.json, into .build/; the sources are the build's, in
// dist/): this is the type-check, and the tests then run as JavaScript, without a TypeScript
// loader in each of their processes and threads. With --all (`npm test`) it also lints and
// builds everything, side by side with that compile: ESLint, Vite's build of the console and the
// console's type-check. Then:
//   test/unit/      needs no store: runs once, in the embedded pass.
//   test/programs/  the command-line programs and examples, clients of the API that are the
//   test/examples/  same whatever the store: run once, in the PostgreSQL pass when there is one.
//   test/console/   the web console in Chromium, also a client of the API: run once, in the
//                   embedded pass.
//   test/           every other test starts a real Skyport and runs once per store: on the
//                   embedded store, and on PostgreSQL when TEST_DATABASE_URL is set (CI sets it).
// Both stores' passes run side by side; each starts its stores from a migrated template made here
// once (test/helpers/templates.ts).
//   --all            lint and build first (what `npm test` runs)
//   --unit           only test/unit/
//   --embedded-only  no PostgreSQL pass even when TEST_DATABASE_URL is set
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const embeddedOnly = args.includes('--embedded-only');
const all = args.includes('--all');
const filters = args.filter((a) => !a.startsWith('--'));

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? find(path) : path.endsWith('.test.js') ? [path] : [];
  });
}

const OUT = '.build';

/**
 * Runs a tool; answers whether it succeeded and what it wrote on stdout. Its output is shown when
 * it fails (several run at once, and a pass says nothing).
 */
function step(name, command, commandArgs) {
  return new Promise((resolve) => {
    const out = [];
    const stdout = [];
    const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => { out.push(d); stdout.push(d); });
    child.stderr.on('data', (d) => out.push(d));
    child.on('close', (code) => {
      if (code !== 0) process.stderr.write(`\n# ${name} failed\n${Buffer.concat(out).toString()}`);
      resolve({ ok: code === 0, stdout: Buffer.concat(stdout).toString() });
    });
  });
}
const tsc = (...tscArgs) => [process.execPath, ['node_modules/typescript/bin/tsc', ...tscArgs]];
const postgres = process.env.TEST_DATABASE_URL && !embeddedOnly && !unitOnly ? process.env.TEST_DATABASE_URL : undefined;
const scratch = mkdtempSync(join(tmpdir(), 'skyport-tests-'));

/**
 * The tests compiled, the files of each pass, and the stores' templates made (once, here, for
 * every test process: test/helpers/templates.ts). The tests, benchmarks and scripts reference the
 * sources' project (tsconfig.build.json): `tsc -b` compiles the sources into dist/ (when they
 * changed since the last build), then type-checks the tests against the sources' declarations
 * rather than a second time from source.
 */
async function compiled() {
  if (!(await step('tests\' compile', ...tsc('-b', 'tsconfig.test.json'))).ok) return null;
  // The compiled tests import ../src/…: that is the build in dist/. What the code finds beside
  // itself (migrations, package.json, docs, the built CLI) is found beside the compiled copy too.
  for (const [name, target] of [['src', 'dist'], ['migrations'], ['docs'], ['bin'], ['dist'], ['package.json']]) {
    rmSync(join(OUT, name), { recursive: true, force: true });
    symlinkSync(join('..', target ?? name), join(OUT, name));
  }
  const source = (f) => f.slice(OUT.length + 1).replace(/\.js$/, '.ts');
  // Only what has a source: a test file moved or deleted leaves its old compiled copy behind.
  const files = find(join(OUT, 'test'))
    .filter((f) => existsSync(source(f)) && (filters.length === 0 || filters.some((x) => source(f).includes(x))))
    .sort();
  const under = (folder) => files.filter((f) => source(f).startsWith(join('test', folder) + '/'));
  const unit = under('unit');
  const programs = unitOnly ? [] : [...under('programs'), ...under('examples')];
  // The web console in Chromium: pages over the API, the same whatever the store (the API's own
  // tests run on both): run once, in the embedded pass, the store a newcomer's `npm start` has.
  const browser = unitOnly ? [] : under('console');
  // Several nodes on one PostgreSQL database and a nats-server of their own: the PostgreSQL pass only.
  const cluster = unitOnly ? [] : under('cluster');
  const server = unitOnly ? [] : files.filter((f) => !unit.includes(f) && !programs.includes(f) && !cluster.includes(f) && !browser.includes(f));
  if (unit.length + programs.length + server.length + cluster.length + browser.length === 0) {
    console.error('no test files match');
    return null;
  }
  let templates = {};
  if (server.length + programs.length + cluster.length + browser.length > 0) {
    const made = await step('the stores\' templates', process.execPath, [join(OUT, 'test/helpers/templates.js'), 'make', scratch, ...(postgres ? [postgres] : [])]);
    if (!made.ok) return null;
    templates = JSON.parse(made.stdout);
  }
  return { unit, programs, browser, cluster, server, templates };
}

// On two cores these tools, each using more than one core for part of its run, finish sooner
// side by side than one after another.
const [lists, ...checked] = await Promise.all([
  compiled(),
  // The web console is type-checked on its own (browser types, JSX).
  step('console\'s type-check', ...tsc('-p', 'console/tsconfig.json')),
  ...(all ? [
    step('ESLint', process.execPath, ['node_modules/eslint/bin/eslint.js', '.']),
    step('console\'s build', process.execPath, ['node_modules/vite/bin/vite.js', 'build', 'console', '--logLevel', 'warn']),
  ] : []),
]);
/** The scratch folder and the PostgreSQL template go at the end of the run, passed or not. */
function cleanUp(templates) {
  rmSync(scratch, { recursive: true, force: true });
  if (templates?.TEST_POSTGRES_TEMPLATE) spawnSync(process.execPath, [join(OUT, 'test/helpers/templates.js'), 'drop', postgres, templates.TEST_POSTGRES_TEMPLATE], { stdio: 'inherit' });
}
if (!lists || !checked.every((c) => c.ok)) {
  cleanUp(lists?.templates);
  process.exit(1);
}
const { unit, programs, browser, cluster, server, templates } = lists;

/**
 * The longest a test file may run: about ten times the longest single tests (the authorization
 * matrix, a cluster node killed with SIGKILL: about 30 s each on a machine where the whole suite
 * takes 7-9 minutes), so that only a file that hangs reaches it.
 */
const FILE_TIMEOUT_MS = 6 * 60 * 1000;

/**
 * One `node --test` run; answers whether it passed. A live pass prints as it goes; the other
 * keeps its output and prints it whole at its end, so that the two do not interleave.
 */
function pass(name, list, env, live) {
  // `node --test` with no file runs every test file it can find: a pass with none is skipped.
  if (list.length === 0) return Promise.resolve(true);
  if (live) console.log(`\n# ${name} (${list.length} files)`);
  return new Promise((resolve) => {
    const out = [];
    // --liftoff-only: V8 compiles WebAssembly (the embedded store's PostgreSQL, 9 MB) with its
    // baseline compiler alone. Its optimising tier pays off in a long-lived server, not in a test
    // process of seconds: it cost about a quarter of a short test file's CPU time.
    // A test file that hangs (a hook that never settles, a handle left open) fails by name after
    // FILE_TIMEOUT_MS instead of holding the run forever: node's runner applies --test-timeout to
    // each file as a whole, and --test-force-exit ends a file's process once its tests are done.
    const child = spawn(process.execPath, ['--enable-source-maps', '--liftoff-only', '--test', '--test-reporter=spec', '--test-concurrency=2',
      `--test-timeout=${FILE_TIMEOUT_MS}`, '--test-force-exit', ...list], {
      stdio: ['ignore', live ? 'inherit' : 'pipe', live ? 'inherit' : 'pipe'],
      env: { ...process.env, ...templates, ...env },
    });
    child.stdout?.on('data', (d) => out.push(d));
    child.stderr?.on('data', (d) => out.push(d));
    child.on('close', (code) => {
      if (!live) process.stdout.write(`\n# ${name} (${list.length} files)\n${Buffer.concat(out).toString()}`);
      resolve(code === 0);
    });
  });
}

// The PostgreSQL pass runs beside the embedded one: much of its time is spent in the database
// server's processes, and the embedded pass's in PGlite's thread. Each pass starts its longest
// files first (the runner takes files in the order given): the cluster's, the programs' and the
// console's take 10-40 s each, and left last they would run on alone after everything else.
const passes = [];
if (postgres) {
  passes.push(pass('store: embedded', [...browser, ...server, ...unit], { TEST_STORE: 'embedded' }, true));
  if (server.length + programs.length + cluster.length > 0) passes.push(pass('store: postgres', [...cluster, ...programs, ...server], { TEST_STORE: 'postgres' }, false));
} else {
  passes.push(pass(server.length + programs.length + browser.length > 0 ? 'store: embedded' : 'unit', [...browser, ...programs, ...server, ...unit], { TEST_STORE: 'embedded' }, true));
}
const ok = (await Promise.all(passes)).every(Boolean);

cleanUp(templates);
process.exit(ok ? 0 : 1);
