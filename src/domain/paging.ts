/** The `meta` of a paged list (reference §7: page, per_page, total_pages, total). */
export function pageMeta(page: number, perPage: number, total: number) {
  return { page, per_page: perPage, total, total_pages: Math.ceil(total / perPage) };
}
