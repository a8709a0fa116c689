/**
 * Previous / Next over a paged list of the API (`page`, `total_pages`), saying where it is:
 * "Page n of m", and how many there are when `count` is given ("(42 devices)").
 */
export function Pager({ page, pages, onPage, label, count }: { page: number; pages: number; onPage: (p: number) => void; label: string; count?: string }) {
  if (pages <= 1 && count === undefined) return null;
  return (
    <nav aria-label={label} className="pager">
      <button type="button" onClick={() => onPage(page - 1)} disabled={page <= 1}>Previous</button>
      <span aria-live="polite">Page {page} of {Math.max(1, pages)}{count === undefined ? '' : ` (${count})`}</span>
      <button type="button" onClick={() => onPage(page + 1)} disabled={page >= pages}>Next</button>
    </nav>
  );
}
