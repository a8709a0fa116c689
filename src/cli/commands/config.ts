import type { Command } from 'commander';
import { contextOf } from '../lib/context.js';
import { table } from '../lib/output.js';
import { bodyOf, brief, changeLines, isObject, needed, parseJsonObject, readJsonObject, refusalListing, wholeNumberOf, type JsonObject } from '../lib/json-input.js';
import type { DeviceConfigView, DiffView, ExplainView, HistoryDocumentView, HistoryEntryView, RolloutView } from '../../domain/config/views.js';
import { edit } from './config/edit.js';
import { effectiveOf, ownValues, plural, pretty, previewLine, put, report, targetOf, type Where } from './config/target.js';
import { deliveryText, rolloutLine, rolloutText, watch } from './config/watch.js';

/**
 * Configuration values of a product's fleet and devices (docs/api.md, "Configuration"): read,
 * write (from a file, an argument, or an editor, checked with a dry run first), history, diffs,
 * rollback, explain, and where the rollout stands.
 */

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
