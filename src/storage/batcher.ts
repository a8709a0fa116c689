/**
 * Group commit: callers add items and wait; everything added during one turn of the event loop,
 * and everything added while the flushes in flight run, goes out together in the next flush, in
 * one statement and one transaction. Under load this turns thousands of single-row inserts into
 * a few multi-row ones (the embedded store does about 2,000 single statements a second,
 * DESIGN.md), while a lone caller waits for no timer.
 *
 * The first flush waits for `setImmediate`: the embedded store runs its queries on the main
 * thread, so without that pause each request would flush alone before the next one is parsed.
 * `inFlight` flushes may run at once: 1 for the embedded store (one connection), more for
 * PostgreSQL, whose pool would otherwise sit idle while one flush waits on the network.
 */
export function createBatcher<T>(flush: (items: T[]) => Promise<void>, options: { maxBatch?: number; inFlight?: number } = {}) {
  const maxBatch = options.maxBatch ?? 500;
  const inFlight = Math.max(1, options.inFlight ?? 1);
  let queue: Array<{ item: T; resolve: () => void; reject: (err: unknown) => void }> = [];
  let active = 0;
  let scheduled = false;

  function pump(): void {
    while (active < inFlight && queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      active += 1;
      flush(batch.map((b) => b.item)).then(
        () => { for (const b of batch) b.resolve(); },
        (err) => { for (const b of batch) b.reject(err); },
      ).finally(() => {
        active -= 1;
        pump();
      });
    }
  }

  return {
    add(item: T): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled && active < inFlight) {
          scheduled = true;
          setImmediate(() => {
            scheduled = false;
            pump();
          });
        }
      });
    },
  };
}

/** How many flushes a store takes at once. */
export const flushesFor = (kind: 'postgres' | 'embedded'): number => (kind === 'postgres' ? 4 : 1);
