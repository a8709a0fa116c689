import { readFile } from 'node:fs/promises';
import { ApiError, describeError } from './api.js';
import { required } from './resources.js';

/**
 * What the device, configuration and schema commands share: JSON read from files and arguments
 * with errors that name where it came from, whole-number flags, changes shown as JSON pointers,
 * and refusals that list each violation.
 */
export type JsonObject = Record<string, unknown>;

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `text` as a JSON object, or an error naming `source` (a file, an argument). */
export function parseJsonObject(text: string, source: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(parsed)) throw new Error(`${source} is not a JSON object`);
  return parsed;
}

/** A file's bytes (a firmware binary), or an error naming the file. */
export async function readBinary(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(`cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
  }
}

/** A file's text, or an error naming the file. */
export async function readText(file: string): Promise<string> {
  return (await readBinary(file)).toString('utf8');
}

export async function readJsonObject(file: string): Promise<JsonObject> {
  return parseJsonObject(await readText(file), file);
}

/** A whole-number flag within bounds, or an error naming it. */
export function wholeNumberOf(flag: string, raw: string, min: number, max: number): number {
  const n = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || n < min || n > max) throw new Error(`${flag} must be a whole number from ${min} to ${max}, not "${raw}"`);
  return n;
}

/** A flag the command cannot do without (checked here so the error is one line, not the help). */
export function needed(flag: string, value: string | undefined, what: string): string {
  return required(flag, value, what).trim();
}

/** A path segment. */
export const seg = (s: string) => encodeURIComponent(s);

/** A value on one line, cut short when long. */
export function brief(v: unknown, max = 80): string {
  const s = v === undefined ? 'absent' : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

export type { Change as ChangeView } from '../../domain/config/diff.js';
import type { Change as ChangeView } from '../../domain/config/diff.js';

/** `~ /rgb/type: "off" -> "tracker"`, `+ /sleep: {...}`, `- /rgb: {...}`, one change a line. */
export function changeLines(changes: readonly ChangeView[]): string {
  if (changes.length === 0) return 'no changes\n';
  return changes.map((c) => {
    const at = c.path || '/';
    if (c.op === 'add') return `+ ${at}: ${brief(c.to)}`;
    if (c.op === 'remove') return `- ${at}: ${brief(c.from)}`;
    return `~ ${at}: ${brief(c.from)} -> ${brief(c.to)}`;
  }).join('\n') + '\n';
}

export interface Violation { path?: string; message?: string }

export function violationsOf(body: unknown): Violation[] {
  const v = isObject(body) ? body.violations : undefined;
  return Array.isArray(v) ? (v as Violation[]) : [];
}

export const violationLine = (v: Violation) => `invalid ${v.path || '/'}: ${v.message ?? 'is not allowed'}`;

/**
 * A refusal with violations (invalid values, an invalid schema): each violation on its own line
 * of stderr, then the error, whose one line no longer repeats them.
 */
export function refusalListing(status: number, body: unknown): ApiError {
  const violations = violationsOf(body);
  if (violations.length === 0) return refusal(status, body);
  for (const v of violations) process.stderr.write(`${violationLine(v)}\n`);
  const { code, message } = describeError(status, { ...(body as JsonObject), violations: undefined });
  return new ApiError(status, code, message, body);
}

/** `work`, with the violations of its refusal listed (refusalListing). */
export async function listingViolations<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ApiError && violationsOf(err.body).length > 0) throw refusalListing(err.status, err.body);
    throw err;
  }
}

/** The body of an answer: JSON when it parses, else the text (undefined when empty). */
export async function bodyOf(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The error of a refused answer, as api.request would throw it. */
export function refusal(status: number, body: unknown): ApiError {
  const { code, message } = describeError(status, body);
  return new ApiError(status, code, message, body);
}
