import { DomainError } from './errors.js';

/** Device ids are 24 hex digits (96 bits), as Particle's; stored and compared in lower case. */
export function isDeviceId(value: string): boolean {
  return /^[0-9a-f]{24}$/i.test(value);
}

/** Device names: letters, digits, `-` and `_`, at most 63 characters (as Particle allows). */
export function validateDeviceName(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,63}$/.test(value)) {
    throw new DomainError('invalid_request', 'name must be 1-63 letters, digits, "-" or "_"');
  }
  return value;
}

export function validateNotes(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length > 1000) throw new DomainError('invalid_request', 'notes must be a string of at most 1000 characters');
  return value;
}

/** The most device ids one import takes; more is refused rather than half done. */
export const MAX_IMPORT = 10_000;

/**
 * The ids of an import file (particle-cli sends one id per line): split on any whitespace or
 * commas; blank entries are skipped; each entry is kept as written for the answer.
 */
export function parseIdList(text: string): string[] {
  const ids = text.split(/[\s,]+/).map((s) => s.trim()).filter((s) => s !== '');
  if (ids.length > MAX_IMPORT) throw new DomainError('payload_too_large', `An import may name at most ${MAX_IMPORT} devices; split the file`);
  return ids;
}

/** The device is someone else's; particle-cli looks for this text in `error` or `errors[0]`. */
export function claimedByOther(): DomainError {
  return new DomainError('device_claimed_by_other', 'That belongs to someone else.', { details: { errors: ['That belongs to someone else.'] } });
}

/** Sort keys of the fleet list, `sortAttr` (docs/particle-compatibility.md#products-and-fleets). */
export const SORT_ATTRS = { id: 'id', name: 'name', lastHeard: 'last_heard', last_heard: 'last_heard', firmwareVersion: 'firmware_version', platformId: 'platform_id' } as const;
export type SortColumn = (typeof SORT_ATTRS)[keyof typeof SORT_ATTRS];

export function sortColumnOf(attr: string | undefined): SortColumn {
  if (attr === undefined || attr === '') return 'id';
  const col = (SORT_ATTRS as Record<string, SortColumn>)[attr];
  if (!col) throw new DomainError('invalid_request', `sortAttr must be one of ${Object.keys(SORT_ATTRS).join(', ')}`);
  return col;
}

export const MAX_BULK_PROVISION = 10_000;
