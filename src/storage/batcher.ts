/**
 * Group commit: callers add items and wait; everything added during one turn of the event loop,
 * and everything added while the flushes in flight run, goes out together in the next flush, in
 * one statement and one transaction. Under load this turns thousands of single-row inserts into
 * a few multi-row ones (a statement costs about as much for one row as for many, and the
 * embedded store runs its statements one at a time), while a lone caller waits for no timer.
 *
 * Reads batch the same way: a flush may answer one result per item, in the items' order, and
 * each caller gets its own (a connect storm's thousands of `WHERE id = $1` become a few
 * `WHERE id = ANY($1)`).
 *
 * The first flush waits for `setImmediate`, so that everything added in the same turn goes
 * with it. With `waitMs`, every flush waits that long unless a full batch is waiting, for work
 * that arrives spread out: devices connecting one after another each reach a batcher alone,
 * and each statement costs about the same for one row as for a thousand (see `windowFor`).
 * `inFlight` flushes may run at once (default 1). One is best where each flush ends in a durable
 * commit on PostgreSQL: what arrives meanwhile waits and goes in the next, larger flush, instead
 * of paying for a commit of its own (token batches: docs/benchmarks.md, "Measurements behind
 * design choices"). See `commitsFor` for the embedded store.
 */
export function createBatcher<T, R = void>(flush: (items: T[]) => Promise<R[] | void>, options: { maxBatch?: number; inFlight?: number; waitMs?: number } = {}) {
  const maxBatch = options.maxBatch ?? 500;
  const inFlight = Math.max(1, options.inFlight ?? 1);
  const waitMs = options.waitMs ?? 0;
  const later = (run: () => void) => (waitMs > 0 ? setTimeout(run, waitMs) : setImmediate(run));
  let queue: Array<{ item: T; resolve: (result: R) => void; reject: (err: unknown) => void }> = [];
  let active = 0;
  let scheduled = false;

  function schedule(): void {
    if (scheduled || active >= inFlight || queue.length === 0) return;
    scheduled = true;
    later(() => {
      scheduled = false;
      pump();
    });
  }

  function pump(): void {
    while (active < inFlight && queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      active += 1;
      flush(batch.map((b) => b.item)).then(
        (results) => { batch.forEach((b, i) => b.resolve((results ? results[i] : undefined) as R)); },
        (err) => { for (const b of batch) b.reject(err); },
      ).finally(() => {
        active -= 1;
        // With a window, what came in during the flush gathers more before it goes, unless it is a full batch already.
        if (waitMs > 0 && queue.length < maxBatch) schedule();
        else pump();
      });
    }
  }

  return {
    add(item: T): Promise<R> {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        schedule();
      });
    },
  };
}

/**
 * How long the batchers of the device gateway (connects, presence, configuration) gather work
 * before each flush: without it a connect storm runs one statement per device and stage. Longer
 * on the embedded store, whose statements all share one connection (docs/benchmarks.md,
 * "Configuration fan-out").
 */
export const windowFor = (kind: 'postgres' | 'embedded'): number => (kind === 'embedded' ? 5 : 3);

/**
 * How many flushes that each end in a commit may be in flight at once, for work whose callers
 * wait on the commit while the process has CPU to spare (token issuance). On PostgreSQL one: a
 * second commit costs another WAL flush, and what waits goes in the next, larger flush. On the
 * embedded store two: its thread runs statements one after another, so a second flush waits in
 * the thread's queue and starts the moment the first commits, where with one the thread sat idle
 * while the main thread answered the first batch and sent the next (docs/benchmarks.md,
 * "Measurements behind design choices"). Not for work that keeps the process's CPU busy (webhook
 * deliveries): there smaller batches only cost more.
 */
export const commitsFor = (kind: 'postgres' | 'embedded'): number => (kind === 'embedded' ? 2 : 1);
