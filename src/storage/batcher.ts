/**
 * Group commit: callers add items and wait; everything added during one turn of the event loop,
 * and everything added while a flush is running, goes out together in the next flush, in one
 * statement and one transaction. Under load this turns thousands of single-row inserts into a
 * few multi-row ones (the embedded store does about 2,000 single statements a second,
 * DESIGN.md), while a lone caller waits for no timer.
 *
 * The first flush waits for `setImmediate`: the embedded store runs its queries on the main
 * thread, so without that pause each request would flush alone before the next one is parsed.
 */
export function createBatcher<T>(flush: (items: T[]) => Promise<void>, maxBatch = 500) {
  let queue: Array<{ item: T; resolve: () => void; reject: (err: unknown) => void }> = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        await flush(batch.map((b) => b.item));
        for (const b of batch) b.resolve();
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    running = false;
  }

  return {
    add(item: T): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!running) {
          running = true;
          setImmediate(() => void drain());
        }
      });
    },
  };
}
