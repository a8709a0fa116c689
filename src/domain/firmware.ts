import { DomainError } from './errors.js';

/**
 * Product firmware rules (docs/firmware.md): which version a device is given, and what names,
 * versions and colours are. Pure: no I/O.
 */

/** A product version is the u16 of the module suffix (binary-version-reader's `productVersion`). */
export const MAX_FIRMWARE_VERSION = 65535;
export const MAX_GROUP_NAME_LENGTH = 64;
export const MAX_TITLE_LENGTH = 100;
export const MAX_DESCRIPTION_LENGTH = 2000;

/** What the version a device is given depends on. */
export interface TargetingFacts {
  development: boolean;
  /** The lock (`desired_firmware_version`), or null. */
  desiredFirmwareVersion: number | null;
  /** The versions released to the device's groups (groups with no release left out). */
  groupVersions: readonly number[];
  /** The product default release, or null. */
  productDefault: number | null;
  /** The version of the rollout that started the device and still holds it (docs/firmware.md, "Staged rollouts"), or null. */
  rolloutVersion?: number | null;
}

export type TargetSource = 'lock' | 'rollout' | 'group' | 'product_default';

/**
 * Particle's rules, in order: a development device is never updated automatically; a locked
 * device runs its lock; (Skyport's) a device a rollout started runs the rollout's version; an
 * unlocked device in groups runs the highest version released to any of them; otherwise the
 * product default; otherwise nothing.
 */
export function targetOf(f: TargetingFacts): { version: number; source: TargetSource } | null {
  if (f.development) return null;
  if (f.desiredFirmwareVersion !== null) return { version: f.desiredFirmwareVersion, source: 'lock' };
  if (f.rolloutVersion !== undefined && f.rolloutVersion !== null) return { version: f.rolloutVersion, source: 'rollout' };
  if (f.groupVersions.length > 0) return { version: Math.max(...f.groupVersions), source: 'group' };
  if (f.productDefault !== null) return { version: f.productDefault, source: 'product_default' };
  return null;
}

export const targetVersion = (f: TargetingFacts): number | null => targetOf(f)?.version ?? null;

const bad = (message: string) => new DomainError('invalid_request', message);

/** A firmware version from JSON (a number) or a form or path (digits). */
export function parseFirmwareVersion(value: unknown, field = 'version'): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,5}$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_FIRMWARE_VERSION) {
    throw bad(`${field} must be a whole number from 1 to ${MAX_FIRMWARE_VERSION} (the product version in the firmware's module suffix)`);
  }
  return n;
}

const GROUP_NAME = /^[a-z0-9_-]+$/;

/**
 * A group name as Particle takes it: lower-case letters, digits, dashes and underscores, at most
 * 64. Upper case is refused rather than folded, so that `Europe` and `europe` never name one group
 * by surprise.
 */
export function validateGroupName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value === '') throw bad(`${field} is required: a group name`);
  if (value.length > MAX_GROUP_NAME_LENGTH) throw bad(`${field} "${value.slice(0, 64)}…" is longer than ${MAX_GROUP_NAME_LENGTH} characters`);
  if (!GROUP_NAME.test(value)) throw bad(`${field} "${value}" may hold only lower-case letters a-z, digits, dashes and underscores`);
  return value;
}

/**
 * A list of group names as clients send it: an array, a single name, or (query strings,
 * listDevices) names separated by commas. Repeats are dropped.
 */
export function parseGroupNames(value: unknown, field = 'groups'): string[] {
  if (value === undefined || value === null || value === '') return [];
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : null;
  if (items === null) throw bad(`${field} must be a list of group names`);
  if (items.length > 1000) throw bad(`${field} names at most 1000 groups`);
  return [...new Set(items.map((n, i) => validateGroupName(typeof n === 'string' ? n.trim() : n, `${field}[${i}]`)))];
}

/** A group's colour, as the console shows it: `#rgb` or `#rrggbb`. */
export function validateColor(value: unknown): string | null {
  if (value === null || value === '') return null;
  if (typeof value !== 'string' || !/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(value)) throw bad('color must be a hex colour such as #e74c3c');
  return value.toLowerCase();
}

export function validateText(value: unknown, field: string, max: number, required = false): string {
  if (value === undefined || value === null || value === '') {
    if (required) throw bad(`${field} is required`);
    return '';
  }
  if (typeof value !== 'string') throw bad(`${field} must be text`);
  if (value.length > max) throw bad(`${field} is at most ${max} characters`);
  return value;
}

/** A boolean as JSON or a form sends it. */
export function parseFlag(value: unknown, field: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw bad(`${field} must be true or false`);
}

/** Devices that share what their target depends on, counted (a fleet's devices fold into few such classes). */
export interface DeviceClass {
  development: boolean;
  desiredFirmwareVersion: number | null;
  /** The version the devices run (their last `hello`), or null. */
  running: number | null;
  groupIds: readonly number[];
  count: number;
}

/** The releases of a product: its default, and the version released to each group (by group id). */
export interface ReleaseState {
  productDefault: number | null;
  groups: ReadonlyMap<number, number | null>;
}

/** What a class of devices' target depends on under some releases (and, for a group change, other groups). */
export function factsOf(c: DeviceClass, s: ReleaseState, groupIds: readonly number[] = c.groupIds): TargetingFacts {
  return {
    development: c.development, desiredFirmwareVersion: c.desiredFirmwareVersion, productDefault: s.productDefault,
    groupVersions: groupIds.map((id) => s.groups.get(id) ?? null).filter((v): v is number => v !== null),
  };
}

export interface Impact { total: number; by_version: Array<{ version: number; total: number }> }

/**
 * How many devices a change would update, by the version they run now (0: none reported): those
 * whose target changes to a version they do not run. A device whose target stays, or which is
 * left with none, keeps what it runs.
 */
export function impactOf(changes: ReadonlyArray<{ count: number; running: number | null; before: TargetingFacts; after: TargetingFacts }>): Impact {
  const byVersion = new Map<number, number>();
  let total = 0;
  for (const c of changes) {
    const was = targetVersion(c.before);
    const will = targetVersion(c.after);
    if (will === null || will === was || will === c.running) continue;
    total += c.count;
    const from = c.running ?? 0;
    byVersion.set(from, (byVersion.get(from) ?? 0) + c.count);
  }
  return { total, by_version: [...byVersion].sort((a, b) => a[0] - b[0]).map(([version, n]) => ({ version, total: n })) };
}
