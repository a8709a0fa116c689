import { ApiError } from '../../../lib/api-error.js';

/**
 * Configuration documents by JSON pointer, as the API names settings (violations, explain,
 * history diffs): small, so that the pages without a form load without the form's code.
 */
export interface Violation { path: string; message: string }

/** The violations of an API refusal (a 400 invalid_configuration, a 422 schema), if any. */
export function violationsOf(err: unknown): Violation[] | null {
  return err instanceof ApiError && Array.isArray(err.body.violations) ? err.body.violations as Violation[] : null;
}

/** A JSON pointer's keys, unescaped. */
export function pointerKeys(path: string): string[] {
  return path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Every leaf of a document (arrays whole, as the history's diffs compare them), by JSON pointer. */
export function leaves(doc: unknown, at = ''): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Object.keys(doc).length > 0) {
    for (const [k, v] of Object.entries(doc)) {
      for (const [p, x] of leaves(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`)) out.set(p, x);
    }
  } else if (at !== '') {
    out.set(at, doc);
  }
  return out;
}

/** A value as a person reads it in a table cell. */
export function shown(value: unknown): string {
  return value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value);
}
