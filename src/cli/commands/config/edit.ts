import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliContext } from '../../lib/context.js';
import { parseJsonObject, refusal, refusalListing, violationLine, violationsOf, type JsonObject } from '../../lib/json-input.js';
import { ownValues, plural, pretty, put, report, sameJson, type Target } from './target.js';

/**
 * `skyport config edit`: the values in $EDITOR, checked with a dry run when saved, the editor
 * opened again with the violations until they pass or the user gives up.
 */

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

export async function edit(ctx: CliContext, t: Target): Promise<void> {
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
