/**
 * The `meta` of a paged list: page, per_page, total_pages, total
 * (docs/particle-compatibility.md#products-and-fleets).
 */
export function pageMeta(page: number, perPage: number, total: number) {
  return { page, per_page: perPage, total, total_pages: Math.ceil(total / perPage) };
}
