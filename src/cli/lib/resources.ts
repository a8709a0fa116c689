import { ApiError, type Api, type RequestOptions } from './api.js';
import type { CliContext } from './context.js';

/**
 * Helpers the resource commands share (products, their fleets, teams, clients and customers):
 * which product a command works on, clear errors for flags, and key/value listings.
 */

interface ProductSummary { id: number; slug: string; name: string }

/**
 * The product a command works on: `--product` as given (an id or a slug; the cloud resolves
 * both), or, when it is left out, the one product the token manages (a product's own token
 * always has exactly one). Several or none: an error that says what to pass.
 */
export async function productRef(api: Api, given: string | undefined, how = 'pass --product'): Promise<string> {
  if (given !== undefined) {
    if (given.trim() === '') throw new Error('the product must be an id or a slug, not empty');
    return given.trim();
  }
  const { products } = await api.request<{ products: ProductSummary[] }>('GET', '/v1/products');
  if (products.length === 1) return (products[0] as ProductSummary).slug;
  if (products.length === 0) throw new Error(`this token manages no product: create one with \`skyport product create\`, or ${how}`);
  const shown = products.slice(0, 5).map((p) => p.slug).join(', ');
  throw new Error(`this token manages ${products.length} products: ${how} (one of ${shown}${products.length > 5 ? ', …' : ''})`);
}

/** The product's routes; the cloud's 403 for an unknown product names the product. */
export interface ProductApi {
  readonly ref: string;
  request<T = unknown>(method: string, rest: string, options?: RequestOptions): Promise<T>;
}

export function productApi(api: Api, ref: string): ProductApi {
  return {
    ref,
    async request<T>(method: string, rest: string, options?: RequestOptions): Promise<T> {
      try {
        return await api.request<T>(method, `/v1/products/${encodeURIComponent(ref)}${rest}`, options);
      } catch (err) {
        // The cloud answers the same 403 for a product that does not exist and one the caller
        // may not manage (docs/api.md, "Products and teams").
        if (err instanceof ApiError && err.status === 403 && err.code === 'Permission Denied') {
          throw new ApiError(err.status, err.code, `product ${ref}: ${err.message}`, err.body);
        }
        throw err;
      }
    },
  };
}

/** The product a command works on, from the command's context: --product, else the token's only product. */
export async function productOf(ctx: CliContext, given: string | undefined, how?: string): Promise<ProductApi> {
  const api = ctx.authed();
  return productApi(api, await productRef(api, given, how));
}

/** Aligned `key  value` lines, for one record (absent values shown as `-`). */
export function fields(pairs: ReadonlyArray<[string, unknown]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  const show = (v: unknown) => (v === null || v === undefined || v === '' ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${show(v)}`).join('\n') + '\n';
}

/** A whole number flag (`--page 2`), or an error naming the flag. */
export function wholeNumber(flag: string, value: string | undefined, min = 1): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value.trim()) || Number(value) < min) throw new Error(`${flag} must be a whole number${min > 0 ? ` of at least ${min}` : ''}, not "${value}"`);
  return Number(value);
}

/** A flag that must be there (checked by the command, so the error is one line). */
export function required<T>(flag: string, value: T | undefined, what: string): T {
  if (value === undefined || (typeof value === 'string' && value.trim() === '')) throw new Error(`${what} needs ${flag}`);
  return value;
}

/** "page 2 of 3, 52 in all" under a paged table. */
export function pageLine(meta: { page: number; total_pages: number; total: number } | undefined, noun: string): string {
  if (!meta) return '';
  return `page ${meta.page} of ${Math.max(1, meta.total_pages)}, ${meta.total} ${noun} in all\n`;
}

/** What a paged list says when the page is empty: nothing at all, or nothing this far. */
export function emptyPage(meta: { page: number; total_pages: number; total: number }, noun: string, where: string): string {
  return meta.total === 0 ? `no ${noun} (${where})\n` : `no ${noun} on this page (${where})\n${pageLine(meta, noun)}`;
}
