import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Api } from '../lib/api.js';
import { contextOf, type CliContext } from '../lib/context.js';
import { progress, table } from '../lib/output.js';
import {
  bodyOf, brief, changeLines, isObject, needed, parseJsonObject, readJsonObject, refusal, refusalListing, seg,
  violationLine, violationsOf, wholeNumberOf, type JsonObject,
} from '../lib/json-input.js';
import type { DeviceConfigView, DiffView, ExplainView, HistoryDocumentView, HistoryEntryView, RolloutView } from '../../domain/config/views.js';

/**
 * Configuration values of a product's fleet and devices (docs/api.md, "Configuration"): read,
 * write (from a file, an argument, or an editor, checked with a dry run first), history, diffs,
 * rollback, explain, and where the rollout stands.
 */

interface Where { product?: string; device?: string }
interface Target { api: Api; product: string; device: string | undefined; base: string; path: string }

function targetOf(ctx: CliContext, opts: Where, what: string): Target {
  const api = ctx.authed();
  const product = needed('--product', opts.product, what);
  const device = opts.device === undefined ? undefined : needed('--device', opts.device, what);
  const base = `/v1/products/${seg(product)}/config`;
  return { api, product, device, base, path: device === undefined ? base : `${base}/${seg(device)}` };
}


const pretty = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What a device holds or is about to hold: per module, the pending value, else the confirmed one. */
function effectiveOf(c: DeviceConfigView): JsonObject {
  const out: JsonObject = {};
  for (const m of Object.keys(c.delivery)) out[m] = c.configuration.pending[m] ?? c.configuration.current[m];
  return out;
}

/** A device's own values (what a device write replaces), as the cloud holds them for the schema in force. */
async function ownValues(t: Target & { device: string }): Promise<JsonObject> {
  const answer = await t.api.request<{ own?: JsonObject }>('GET', t.path);
  return isObject(answer.own) ? answer.own : {};
}

async function put(t: Target, values: JsonObject | undefined, dryRun = false): Promise<{ status: number; body: JsonObject }> {
  const res = await t.api.fetch('PUT', t.path, { ...(values === undefined ? {} : { json: values }), query: dryRun ? { dry_run: true } : {} });
  const body = await bodyOf(res);
  return { status: res.status, body: isObject(body) ? body : {} };
}

/**
 * What became of a write: the fleet's is stored and on its way; a device's is applied (200), held
 * for the offline device (202), refused by it (400, with its codes) or unanswered (408, pending).
 */
function report(ctx: CliContext, t: Target, status: number, body: JsonObject, done: string): void {
  if (t.device === undefined) {
    if (status !== 200) throw refusalListing(status, body);
    ctx.out.result(body, () => `${done}: version ${String(body.version)}; connected devices take it now (\`skyport config status --product ${t.product}\` follows the rollout)`);
    return;
  }
  const device = `device ${t.device}`;
  if (status === 200) return ctx.out.result(body, () => `applied: ${device} took it (version ${String(body.version)}; ${done})`);
  if (status === 202) return ctx.out.result(body, () => `held: ${device} is offline and takes version ${String(body.version)} when it next connects (${done})`);
  if (status === 400 && body.error === 'device_rejected_configuration') {
    if (ctx.out.json) process.stdout.write(pretty(body));
    const results = Array.isArray(body.results) ? (body.results as Array<{ module: string; status: string; code?: number }>) : [];
    const refused = results.filter((r) => r.status === 'rejected').map((r) => `${r.module} (code ${r.code})`).join(', ');
    throw new Error(`refused: ${device} refused ${refused || 'the configuration'}; the values are stored and the device keeps its previous ones [400]`);
  }
  if (status === 408) {
    if (ctx.out.json) process.stdout.write(pretty(body));
    throw new Error(`timed out: ${device} did not acknowledge in time; the values are stored and stay pending until it does [408]`);
  }
  throw refusalListing(status, body);
}

const previewLine = (body: JsonObject) => {
  const d = (body.devices ?? {}) as { changed?: number; online?: number; modules?: Record<string, number> };
  const modules = Object.entries(d.modules ?? {}).map(([m, n]) => `${m} ${n}`).join(', ');
  return `valid: ${plural(d.changed ?? 0, 'device')} would change (${d.online ?? 0} connected now)${modules ? `; by module: ${modules}` : ''}; nothing was stored`;
};

// ---- the editor ----

/** Lines at the top of the edited file that start with // are notes, not values. */
const note = (lines: string[]) => lines.map((l) => `// ${l}\n`).join('');
function withoutNotes(text: string): string {
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length && /^\s*\/\//.test(lines[i] as string)) i++;
  return lines.slice(i).join('\n');
}

/** $EDITOR (or $VISUAL, else vi) on `file`, through the shell so that `code --wait` works. */
async function runEditor(file: string): Promise<void> {
  const editor = process.env.EDITOR || process.env.VISUAL || 'vi';
  // Ctrl-C belongs to the editor while it runs (as with git).
  const ignore = () => undefined;
  process.on('SIGINT', ignore);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const child = process.platform === 'win32'
        ? spawn(`${editor} "${file}"`, { shell: true, stdio: 'inherit' })
        : spawn('/bin/sh', ['-c', `${editor} "$@"`, editor, file], { stdio: 'inherit' });
      child.on('error', (err) => reject(new Error(`cannot run the editor (${editor}): ${err.message}`)));
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    });
    if (status !== 0) throw new Error(`the editor (${editor}) exited with status ${status}; nothing sent`);
  } finally {
    process.off('SIGINT', ignore);
  }
}

async function edit(ctx: CliContext, t: Target): Promise<void> {
  const original = t.device === undefined
    ? (await t.api.request<{ configuration: JsonObject }>('GET', t.base)).configuration
    : await ownValues({ ...t, device: t.device });
  const scope = t.device === undefined ? `the fleet's values of product ${t.product}` : `the own values of device ${t.device} (product ${t.product})`;
  const intro = [`${scope}. Lines starting with // are ignored.`, 'Save and quit to check and send; leave the file unchanged or empty to cancel.'];
  const dir = await mkdtemp(join(tmpdir(), 'skyport-config-'));
  const file = join(dir, `${t.device === undefined ? 'fleet' : `device-${t.device}`}.json`);
  let body = pretty(original);
  let problems: string[] = [];
  let values: JsonObject | undefined;
  let preview: JsonObject = {};
  let keep = false;
  try {
    for (;;) {
      const notes = problems.length === 0 ? intro : ['skyport: not sent; fix this, or leave the file unchanged or empty to give up:', ...problems, ...intro];
      await writeFile(file, note(notes) + body, { mode: 0o600 });
      await runEditor(file);
      const edited = withoutNotes(await readFile(file, 'utf8'));
      if (edited.trim() === '' || edited === body) {
        if (problems.length > 0) throw new Error(`left ${edited.trim() === '' ? 'empty' : 'unchanged'} after the errors above: nothing sent`);
        ctx.out.result({ changed: false }, () => 'no changes: nothing sent');
        return;
      }
      body = edited;
      let parsed: JsonObject;
      try {
        parsed = parseJsonObject(edited, 'the edited file');
      } catch (err) {
        problems = [(err as Error).message];
        ctx.out.note(problems[0] as string);
        continue;
      }
      if (sameJson(parsed, original)) {
        ctx.out.result({ changed: false }, () => 'no changes: nothing sent');
        return;
      }
      const check = await put(t, parsed, true);
      if (check.status === 400) {
        const violations = violationsOf(check.body);
        problems = violations.length > 0 ? violations.map(violationLine) : [refusal(check.status, check.body).message];
        for (const p of problems) ctx.out.note(p);
        ctx.out.note('reopening the editor');
        continue;
      }
      if (check.status !== 200) throw refusalListing(check.status, check.body);
      values = parsed;
      preview = check.body;
      break;
    }
  } catch (err) {
    // The user's work is not thrown away with the error.
    if (body !== pretty(original)) {
      ctx.out.note(`your edit is kept in ${file}`);
      keep = true;
    }
    throw err;
  } finally {
    if (!keep) await rm(dir, { recursive: true, force: true });
  }
  if (values === undefined) return;
  const sent = await put(t, values);
  const changed = ((preview.devices ?? {}) as { changed?: number; online?: number });
  report(ctx, t, sent.status, sent.body, t.device === undefined
    ? `saved the fleet's values (${plural(changed.changed ?? 0, 'device')} change, ${changed.online ?? 0} of them connected)`
    : 'its own values replaced');
}

// ---- status ----

const rolloutLine = (r: RolloutView) => `${plural(r.devices, 'device')}: ${r.in_sync} in sync, ${r.pending} pending (${r.pending_online} connected), ${r.rejected} refused`;
const rolloutText = (r: RolloutView) => {
  const rows = Object.entries(r.modules).map(([module, m]) => ({ module, ...m }));
  return `${rolloutLine(r)}\n${rows.length === 0 ? '' : table(rows, [['MODULE', (m) => m.module], ['IN SYNC', (m) => m.in_sync], ['PENDING', (m) => m.pending], ['REFUSED', (m) => m.rejected]])}`;
};
const deliveryText = (c: DeviceConfigView) => {
  const rows = Object.entries(c.delivery).map(([module, d]) => ({ module, ...d, source: c.sources[module] }));
  const outside = c.outside_firmware_range.map((o) => `outside the firmware range: ${o.path} (firmware ${o.minimumFirmwareVersion ?? ''}-${o.maximumFirmwareVersion ?? ''})`);
  return table(rows, [['MODULE', (m) => m.module], ['STATE', (m) => m.state], ['SOURCE', (m) => m.source], ['CODE', (m) => m.code], ['SINCE', (m) => m.since]])
    + outside.map((l) => `${l}\n`).join('');
};

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/**
 * Polls `read` until `settled` says so or Ctrl-C, with a progress bar on a terminal (a line on
 * each change otherwise); answers the last reading.
 */
async function watch<T>(read: () => Promise<T>, measure: (r: T) => { total: number; done: number; settled: boolean; line: string }, intervalMs: number): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  let bar: ReturnType<typeof progress> | undefined;
  let total = -1;
  let shown = 0;
  let last = '';
  try {
    for (;;) {
      const r = await read();
      const m = measure(r);
      if (m.total !== total) { bar?.done(); bar = progress(m.total, 'rollout'); total = m.total; shown = 0; }
      if (m.done > shown) { bar?.tick(m.done - shown); shown = m.done; }
      if (!process.stderr.isTTY && m.line !== last) process.stderr.write(`${m.line}\n`);
      last = m.line;
      if (m.settled || stop.signal.aborted) return r;
      await sleep(intervalMs, stop.signal);
      if (stop.signal.aborted) return r;
    }
  } finally {
    bar?.done();
    process.off('SIGINT', onSignal);
  }
}

// ---- the commands ----

interface SetOptions extends Where { file?: string; reset?: boolean; dryRun?: boolean }

export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('configuration values of a product\'s fleet and devices, their history and rollout (docs/api.md, "Configuration")');
  const product = (c: Command) => c.option('--product <idOrSlug>', 'the product (required)');

  product(config.command('get'))
    .description("print the fleet's values as JSON; with --device the device's effective configuration (--own: its own values)")
    .option('--device <id>', 'a device of the product')
    .option('--own', "with --device: the device's own values, which `config set --device` replaces")
    .action(async (opts: Where & { own?: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, opts, 'config get');
      if (t.device === undefined) {
        if (opts.own) throw new Error('--own needs --device');
        const answer = await t.api.request<{ configuration: JsonObject }>('GET', t.base);
        return ctx.out.result(answer, () => pretty(answer.configuration));
      }
      if (opts.own) {
        const own = await ownValues({ ...t, device: t.device });
        return ctx.out.result({ configuration: own }, () => pretty(own));
      }
      const answer = await t.api.request<DeviceConfigView>('GET', t.path);
      ctx.out.result(answer, () => pretty(effectiveOf(answer)));
      if (!ctx.out.json) {
        const pending = Object.entries(answer.delivery).filter(([, d]) => d.state === 'pending').map(([m]) => m);
        const refused = Object.entries(answer.delivery).filter(([, d]) => d.state === 'rejected').map(([m, d]) => `${m} (code ${d.code})`);
        if (pending.length > 0) ctx.out.note(`pending (the device has yet to take them): ${pending.join(', ')}`);
        if (refused.length > 0) ctx.out.note(`refused by the device: ${refused.join(', ')}`);
      }
    });

  product(config.command('set'))
    .description('replace the values (whole) from --file or a JSON argument; --reset: the fleet to the defaults, a device to inheritance')
    .argument('[json]', 'the values as inline JSON')
    .option('--device <id>', "replace this device's own values")
    .option('--file <file>', 'the values from this JSON file')
    .option('--reset', 'send an empty body: reset')
    .option('--dry-run', 'check and preview; store nothing')
    .action(async (inline: string | undefined, opts: SetOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, opts, 'config set');
      const given = [inline !== undefined, opts.file !== undefined, opts.reset === true].filter(Boolean).length;
      if (given !== 1) throw new Error('give the values once: a JSON argument, --file FILE, or --reset');
      const values = opts.reset ? undefined : inline !== undefined ? parseJsonObject(inline, 'the JSON argument') : await readJsonObject(opts.file as string);
      const sent = await put(t, values, opts.dryRun === true);
      if (opts.dryRun) {
        if (sent.status !== 200) throw refusalListing(sent.status, sent.body);
        return ctx.out.result(sent.body, () => previewLine(sent.body));
      }
      report(ctx, t, sent.status, sent.body, values === undefined
        ? t.device === undefined ? "reset the fleet's values to the schema's defaults" : 'back to inheritance'
        : t.device === undefined ? "saved the fleet's values" : 'its own values replaced');
    });

  product(config.command('edit'))
    .description('edit the values in $EDITOR (or $VISUAL, else vi); checked with a dry run, reopened on errors, then sent')
    .option('--device <id>', "edit this device's own values")
    .action(async (opts: Where, cmd: Command) => {
      const ctx = await contextOf(cmd);
      await edit(ctx, targetOf(ctx, opts, 'config edit'));
    });

  product(config.command('history'))
    .description("the product's configuration changes, newest first")
    .option('--device <id>', "only this device's values")
    .option('--fleet', "only the fleet's values")
    .option('--kind <kind>', 'values or schema')
    .option('--page <n>', 'page (default 1)')
    .option('--per-page <n>', 'changes a page (default 25, at most 1000)')
    .action(async (opts: Where & { fleet?: boolean; kind?: string; page?: string; perPage?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, { product: opts.product }, 'config history');
      if (opts.fleet && opts.device !== undefined) throw new Error('give --device or --fleet, not both');
      if (opts.kind !== undefined && opts.kind !== 'values' && opts.kind !== 'schema') throw new Error(`--kind must be values or schema, not "${opts.kind}"`);
      const query = {
        kind: opts.kind, device_id: opts.fleet ? 'fleet' : opts.device,
        page: opts.page === undefined ? undefined : wholeNumberOf('--page', opts.page, 1, 1_000_000),
        per_page: opts.perPage === undefined ? undefined : wholeNumberOf('--per-page', opts.perPage, 1, 1000),
      };
      const answer = await t.api.request<{ history: HistoryEntryView[]; meta: { page: number; total: number; total_pages: number } }>('GET', `${t.base}/history`, { query });
      ctx.out.result(answer, () => {
        if (answer.history.length === 0) return 'no changes recorded\n';
        const rows = table(answer.history, [
          ['VERSION', (h) => h.version],
          ['KIND', (h) => h.kind],
          ['SCOPE', (h) => (h.kind === 'schema' ? 'product' : h.device_id ?? 'fleet')],
          ['ACTION', (h) => (h.rolled_back_from ? `${h.action} of ${h.rolled_back_from}` : h.action)],
          ['BY', (h) => `${h.by.kind} ${h.by.id}`],
          ['AT', (h) => h.at],
        ]);
        const m = answer.meta;
        return m.total_pages > m.page ? `${rows}page ${m.page} of ${m.total_pages} (${m.total} changes): --page ${m.page + 1} for more\n` : rows;
      });
    });

  product(config.command('diff'))
    .description('what a version changed: against the previous version of its scope, or --against another')
    .argument('<version>', 'a version of the history')
    .option('--against <version>', 'compare with this version (of the same scope)')
    .action(async (version: string, opts: Where & { against?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, { product: opts.product }, 'config diff');
      const v = wholeNumberOf('the version', version, 1, 2_147_483_647);
      const against = opts.against === undefined ? undefined : wholeNumberOf('--against', opts.against, 1, 2_147_483_647);
      const answer = await t.api.request<DiffView>('GET', `${t.base}/history/${v}/diff`, { query: { against } });
      ctx.out.result(answer, () => {
        const scope = answer.kind === 'schema' ? 'schema' : `values, ${answer.device_id ? `device ${answer.device_id}` : 'fleet'}`;
        const from = answer.from === null ? (answer.kind === 'schema' ? 'the default schema' : 'no values') : `version ${answer.from}`;
        return `version ${answer.to} against ${from} (${scope})\n${changeLines(answer.changes)}`;
      });
    });

  product(config.command('rollback'))
    .description('write the document of a version again (fleet values, a device\'s values, or the schema): a new version')
    .argument('<version>', 'the version to restore')
    .action(async (version: string, opts: Where, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, { product: opts.product }, 'config rollback');
      const v = wholeNumberOf('the version', version, 1, 2_147_483_647);
      // Which scope the version is of (and a 404 for an unknown version) before anything changes.
      const entry = await t.api.request<HistoryDocumentView>('GET', `${t.base}/history/${v}`);
      const res = await t.api.fetch('POST', `${t.base}/history/${v}/rollback`);
      const raw = await bodyOf(res);
      const body = isObject(raw) ? raw : {};
      if (entry.kind === 'schema') {
        if (!res.ok) throw refusalListing(res.status, body);
        return ctx.out.result(body, () => `${String(body.message)} (version ${String(body.history_version)})`);
      }
      report(ctx, { ...t, device: entry.device_id ?? undefined }, res.status, body, `version ${v} restored`);
    });

  product(config.command('explain'))
    .description("every setting of a device's effective configuration with its source: device, fleet or default")
    .option('--device <id>', 'the device (required)')
    .action(async (opts: Where, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, { ...opts, device: needed('--device', opts.device, 'config explain') }, 'config explain');
      const answer = await t.api.request<ExplainView>('GET', `${t.path}/explain`);
      ctx.out.result(answer, () => `development ${answer.development ? 'yes' : 'no'}; device values win: ${answer.device_values_win ? 'yes' : 'no'}; firmware ${answer.firmware_version ?? 'not reported'}\n`
        + table(answer.settings, [['PATH', (s) => s.path], ['VALUE', (s) => brief(s.value, 60)], ['SOURCE', (s) => s.source]])
        + answer.outside_firmware_range.map((o) => `outside the firmware range: ${o.path}\n`).join(''));
    });

  product(config.command('status'))
    .description("the fleet's rollout (devices in sync, pending, refused), or with --device where each module stands")
    .option('--device <id>', 'one device: the delivery state of each module')
    .option('--watch', 'poll until nothing is pending on a connected device (the device: nothing pending), or Ctrl-C')
    .option('--interval <seconds>', 'seconds between polls with --watch (default 2)')
    .action(async (opts: Where & { watch?: boolean; interval?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = targetOf(ctx, opts, 'config status');
      const intervalMs = (opts.interval === undefined ? 2 : wholeNumberOf('--interval', opts.interval, 1, 3600)) * 1000;
      if (t.device === undefined) {
        const read = () => t.api.request<RolloutView>('GET', `${t.base}/rollout`);
        const r = opts.watch
          ? await watch(read, (x) => ({ total: x.devices, done: x.devices - x.pending, settled: x.pending_online === 0, line: rolloutLine(x) }), intervalMs)
          : await read();
        return ctx.out.result(r, () => rolloutText(r));
      }
      const read = () => t.api.request<DeviceConfigView>('GET', t.path);
      const c = opts.watch
        ? await watch(read, (x) => {
          const states = Object.values(x.delivery);
          const pending = states.filter((d) => d.state === 'pending').length;
          return { total: states.length, done: states.length - pending, settled: pending === 0, line: `${states.length - pending} of ${plural(states.length, 'module')} settled` };
        }, intervalMs)
        : await read();
      ctx.out.result(c, () => deliveryText(c));
    });
}

