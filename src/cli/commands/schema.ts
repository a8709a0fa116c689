import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEFAULT_SCHEMA_VERSION, defaultSchema, schemaVersion } from '../../domain/config/default-schema.js';
import { mergeAndCheck, type MergeConflict } from '../../domain/config/schema-merge.js';

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

function merge(opts: MergeOptions): void {
  const base = readSchema('base', opts.base);
  const ours = readSchema('ours', opts.ours);
  // The newer default is usually the one this Skyport ships: after an upgrade, it is the new one.
  const theirs = opts.theirs === undefined ? defaultSchema() : readSchema('theirs', opts.theirs);

  // A custom schema derived from another default than --base gives a wrong merge: say so.
  const [from, derived] = [schemaVersion(base), schemaVersion(ours)];
  if (from !== null && derived !== null && from !== derived) {
    process.stderr.write(`warning: --ours is tagged v${derived} but --base is v${from}; --base should be the default it was derived from\n`);
  }

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
}
