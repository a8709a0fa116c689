/**
 * A time as ISO 8601 text, exactly as `Date.prototype.toISOString` writes it, for the paths that
 * write several per webhook delivery (its row, its attempt, the event's `published_at`) or per
 * token (its creation and expiry; tokens.repository.ts). V8
 * formats each through a printf-style formatter, about 0.6 µs a time, 3 % of the server's main
 * thread under a flood of deliveries (`perf`, docs/benchmarks.md, "Webhooks"). Here the text up to
 * the second is kept for the few seconds in use, so a time costs a lookup and a join.
 */
const seconds = new Map<number, string>();
const KEEP = 64;

export function isoTime(t: Date | number): string {
  const ms = typeof t === 'number' ? t : t.getTime();
  const s = Math.floor(ms / 1000);
  let head = seconds.get(s);
  if (head === undefined) {
    // An invalid time throws here (RangeError), as toISOString does.
    const full = new Date(ms).toISOString();
    // Years outside 0000-9999 (written with a sign and six digits) and fractions of a millisecond
    // (which Date drops) are left to toISOString.
    if (full.length !== 24 || !Number.isInteger(ms)) return full;
    if (seconds.size >= KEEP) seconds.clear();
    seconds.set(s, (head = full.slice(0, 20)));
  }
  const r = ms - s * 1000;
  return `${head}${r < 10 ? '00' : r < 100 ? '0' : ''}${r}Z`;
}
