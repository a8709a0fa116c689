import type { FirmwareVersion, Impact } from '../api/firmware.js';

/** A size as a person reads it: bytes, KiB or MiB. */
export function sizeInWords(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Where a version is released: the fleet (product default), groups, or nowhere (now, or ever). */
export function releasedTo(f: Pick<FirmwareVersion, 'product_default' | 'groups' | 'released_at'>): string {
  const places = [...(f.product_default ? ['the fleet (product default)'] : []), ...(f.groups.length > 0 ? [`${f.groups.length === 1 ? 'group' : 'groups'} ${f.groups.join(', ')}`] : [])];
  if (places.length > 0) return places.join(' and ');
  return f.released_at ? 'no longer released' : 'not released';
}

/** Who uploaded a version: the account's name, or what it was when the account is gone or was a product's token. */
export function uploadedBy(by: FirmwareVersion['uploaded_by']): string {
  if (by.username) return by.username;
  return by.kind === 'product' ? "the product's token" : 'a deleted account';
}

/** The module check an upload failed (`reason` of invalid_firmware, docs/firmware.md "Module checks"), as a heading. */
const REASONS: Record<string, string> = {
  format: 'not a firmware binary',
  crc: 'the file is damaged',
  module_function: 'not application firmware',
  platform: "another platform than the product's",
  product_id: 'built for another product',
  product_version: 'another version than the one given',
};

export const reasonInWords = (reason: unknown): string | null => (typeof reason === 'string' && reason in REASONS ? REASONS[reason] as string : null);

/** "3 devices would update: 2 from version 1, 1 that reported none", or that none would. */
export function impactInWords(i: Impact): string {
  if (i.total === 0) return 'No device would update now.';
  const from = i.by_version.map((v) => (v.version === 0 ? `${v.total} that reported no version` : `${v.total} from version ${v.version}`));
  return `${plural(i.total, 'device')} would update: ${from.join(', ')}.`;
}

export const when = (iso: string): string => new Date(iso).toLocaleString();
