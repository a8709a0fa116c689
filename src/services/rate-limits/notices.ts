import type { Bus } from '../../bus/bus.js';

/**
 * Sends counts per key to the other nodes as notices of at most `size` keys each, so that a
 * spray of addresses in one turn of the event loop makes several notices of bounded size, not
 * one without end. A bus that closed or went down meanwhile drops them: each node's own counts
 * still hold, and what is sent again later (the next counts, the next refresh) catches up.
 */
export function notifyInChunks(bus: Bus, topic: string, entries: Iterable<readonly [string, number]>, size: number, notice: (chunk: Record<string, number>) => unknown): void {
  let chunk: Record<string, number> = {};
  let n = 0;
  const send = () => {
    try {
      bus.notify(topic, notice(chunk));
    } catch {
      // Closed or down: see above.
    }
    chunk = {};
    n = 0;
  };
  for (const [key, count] of entries) {
    chunk[key] = count;
    if (++n === size) send();
  }
  if (n > 0) send();
}
