import { DomainError } from './errors.js';

/**
 * Products (docs/particle-compatibility.md#products-and-fleets). A product is addressed by its
 * numeric id or its slug on every route (`:productIdOrSlug`); slugs are made from the name and
 * never look like a number.
 */
export interface NewProductInput {
  name: string;
  description: string;
  platformId: number;
}

export function validateNewProduct(body: { name?: unknown; description?: unknown; platform_id?: unknown }): NewProductInput {
  const name = validateProductName(body.name);
  const description = validateDescription(body.description);
  const raw = body.platform_id;
  const platformId = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : raw;
  // Device OS platform ids (6 Photon, 12 Argon, 13 Boron, 26 Tracker, ...); devices of the product must match it.
  if (typeof platformId !== 'number' || !Number.isInteger(platformId) || platformId < 1 || platformId > 65535) {
    throw new DomainError('invalid_request', 'platform_id must be a Device OS platform id (a whole number, e.g. 26 for Tracker)');
  }
  return { name, description, platformId };
}

export function validateProductName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('invalid_request', 'product name is required');
  if (value.length > 100) throw new DomainError('invalid_request', 'product name may have at most 100 characters');
  return value.trim();
}

export function validateDescription(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > 2000) throw new DomainError('invalid_request', 'description must be a string of at most 2000 characters');
  return value;
}

/** `My Tracker Fleet` → `my-tracker-fleet-v`; a numeric-looking slug gets a prefix so ids and slugs never collide. */
export function slugFor(name: string, suffix: string): string {
  const base = name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'product';
  const slug = suffix === '' ? base : `${base}-${suffix}`;
  return /^\d+$/.test(slug) ? `p-${slug}` : slug;
}

/** Whether `:productIdOrSlug` is an id (digits) rather than a slug. */
export function isProductId(idOrSlug: string): boolean {
  return /^\d{1,15}$/.test(idOrSlug);
}
