import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEFAULT_SCHEMA_VERSION, defaultSchema, schemaVersion } from '../../domain/config/default-schema.js';
import type { MergeConflict } from '../../domain/config/schema-merge.js';
import { diffJson } from '../../domain/config/diff.js';
import { contextOf, type CliContext } from '../lib/context.js';
import { bodyOf, changeLines, isObject, needed, parseJsonObject, readText, refusal, refusalListing, seg } from '../lib/json-input.js';

type Json = Record<string, unknown>;

interface MergeOptions {
  base: string;
  theirs?: string;
  ours: string;
  out?: string;
}

/** A schema file as a JSON object, or an error naming the flag and the file. */
function readSchema(flag: string, file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read --${flag} ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`--${flag} ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`--${flag} ${file} is not a JSON object (a schema is one)`);
  return parsed as Json;
}

/** A value short enough for one line; `absent` where a side does not have the key. */
function show(v: unknown): string {
  if (v === undefined) return 'absent';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const REASONS: Record<MergeConflict['reason'], string> = {
  'changed-in-both': 'changed differently in both',
  'added-in-both': 'added differently in both',
  'removed-in-theirs': 'removed in theirs but changed in ours',
  'removed-in-ours': 'removed in ours but changed in theirs',
};

const conflictLine = (c: MergeConflict) =>
  `conflict ${c.path || '/'}: ${REASONS[c.reason]} (base ${show(c.base)}, ours ${show(c.ours)}, theirs ${show(c.theirs)}); kept ours\n`;

async function merge(opts: MergeOptions): Promise<void> {
  const base = readSchema('base', opts.base);
  const ours = readSchema('ours', opts.ours);
  // The newer default is usually the one this Skyport ships: after an upgrade, it is the new one.
  const theirs = opts.theirs === undefined ? defaultSchema() : readSchema('theirs', opts.theirs);

  // A custom schema derived from another default than --base gives a wrong merge: say so.
  const [from, derived] = [schemaVersion(base), schemaVersion(ours)];
  if (from !== null && derived !== null && from !== derived) {
    process.stderr.write(`warning: --ours is tagged v${derived} but --base is v${from}; --base should be the default it was derived from\n`);
  }

  // The merge checks with Ajv: loaded for this command alone, not at every start of the CLI.
  const { mergeAndCheck } = await import('../../domain/config/schema-merge.js');
  const { merged, conflicts, violations } = mergeAndCheck({ base, theirs, ours });
  // Written even with conflicts (ours' value kept at each) so they can be resolved by hand in it.
  const text = `${JSON.stringify(merged, null, 2)}\n`;
  if (!opts.out) process.stdout.write(text);
  else {
    try {
      writeFileSync(opts.out, text);
    } catch (err) {
      throw new Error(`cannot write --out ${opts.out}: ${(err as Error).message}`);
    }
  }

  for (const c of conflicts) process.stderr.write(conflictLine(c));
  for (const v of violations) process.stderr.write(`invalid ${v.path || '/'}: ${v.message}\n`);
  const version = schemaVersion(merged);
  if (conflicts.length > 0 || violations.length > 0) {
    process.stderr.write(`skyport: ${conflicts.length} conflict(s), ${violations.length} violation(s); resolve them in the merged schema before uploading it\n`);
    process.exitCode = 1;
  } else if (opts.out) {
    process.stdout.write(`merged cleanly${version === null ? '' : ` to v${version}`}: ${opts.out}\n`);
  }
}

export function registerSchemaCommands(program: Command): void {
  const schema = program.command('schema').description('product configuration schemas (docs/api.md, "Configuration")');

  schema.command('merge')
    .description('carry a newer default schema into a custom schema derived from an older one (a three-way merge); exits 1 on conflicts or an invalid result')
    .requiredOption('--base <file>', 'the default schema the custom schema was derived from (e.g. v19)')
    .option('--theirs <file>', `the newer default schema (default: the built-in one of this Skyport, v${DEFAULT_SCHEMA_VERSION})`)
    .requiredOption('--ours <file>', "the product's custom schema")
    .option('--out <file>', 'write the merged schema to this file instead of standard output')
    .action((opts: MergeOptions) => merge(opts));

  const withProduct = (c: Command) => c.option('--product <idOrSlug>', 'the product (required)');

  withProduct(schema.command('get'))
    .description("print the product's schema in force (the default unless replaced), key order kept")
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const text = await productSchemaText(ctx, needed('--product', opts.product, 'schema get'));
      // Pretty, with the key order (the display order) as stored.
      process.stdout.write(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
    });

  withProduct(schema.command('set'))
    .description("replace the product's schema with a custom one (it must keep every module and key of the default); --dry-run checks it")
    .argument('<file>', 'the schema (JSON)')
    .option('--dry-run', 'check it and list the stored values it would set aside; store nothing')
    .action(async (file: string, opts: { product?: string; dryRun?: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const product = needed('--product', opts.product, 'schema set');
      const text = await readText(file);
      parseJsonObject(text, file); // a local mistake is said with the file's name
      const res = await ctx.authed().fetch('PUT', `/v1/products/${seg(product)}/config`, {
        body: text, headers: { 'content-type': SCHEMA_TYPE }, query: opts.dryRun ? { dry_run: true } : {},
      });
      const body = await bodyOf(res);
      if (!res.ok || !isObject(body)) throw refusalListing(res.status, body);
      const aside = Array.isArray(body.kept_aside) && body.kept_aside.length > 0 ? `; values of ${body.kept_aside.join(', ')} would be set aside` : '';
      ctx.out.result(body, () => (opts.dryRun
        ? `valid${aside}; nothing was stored`
        : `${String(body.message)} (version ${String(body.history_version)})`));
    });

  withProduct(schema.command('reset'))
    .description("restore the default schema (values of modules it lacks are kept aside, not deleted)")
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const product = needed('--product', opts.product, 'schema reset');
      const res = await ctx.authed().fetch('DELETE', `/v1/products/${seg(product)}/config`, { body: '{}', headers: { 'content-type': SCHEMA_TYPE } });
      const body = await bodyOf(res);
      // Already the default: nothing to do, which is what was asked.
      if (res.status === 404 && isObject(body) && body.error === 'not_found') {
        return ctx.out.result({ ok: true, changed: false }, () => 'the schema already is the default: nothing changed');
      }
      if (!res.ok || !isObject(body)) throw refusal(res.status, body);
      ctx.out.result(body, () => `${String(body.message)} (version ${String(body.history_version)})`);
    });

  withProduct(schema.command('diff'))
    .description("what uploading a schema file would change in the product's schema, as JSON pointers")
    .argument('<file>', 'the schema (JSON)')
    .action(async (file: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const product = needed('--product', opts.product, 'schema diff');
      const local = parseJsonObject(await readText(file), file);
      const current = JSON.parse(await productSchemaText(ctx, product)) as unknown;
      const changes = diffJson(current, local);
      ctx.out.result({ product, file, changes }, () => changeLines(changes));
    });
}

const SCHEMA_TYPE = 'application/schema+json';

/** The schema in force for a product, as the cloud stores it. */
async function productSchemaText(ctx: CliContext, product: string): Promise<string> {
  const res = await ctx.authed().fetch('GET', `/v1/products/${seg(product)}/config`, { headers: { accept: SCHEMA_TYPE } });
  const text = await res.text();
  if (!res.ok) {
    let body: unknown = text;
    try { body = JSON.parse(text); } catch { /* not JSON */ }
    throw refusal(res.status, body);
  }
  return text;
}
