/** The longest pause between two polls. */
const MAX_PAUSE_MS = 100;

/**
 * Polls until `f` answers something other than undefined, and answers it; fails after `ms`.
 * The one way the tests wait for something the cloud does on its own time (a delivery, a status
 * change). Waiting for something *not* to happen is never a sleep: the test sends a sentinel
 * after it, and once the sentinel is in, what did not arrive before it will not.
 */
export async function eventually<T>(f: () => Promise<T | undefined> | T | undefined, ms = 5000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms;
  // Asked often at first, then less: a long wait (a busy machine) polls a few times a second,
  // not fifty, and leaves the CPU to what it waits for.
  let pause = 10;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`${what} not met in ${ms} ms`);
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(pause * 1.5, MAX_PAUSE_MS);
  }
}

/**
 * `p`, or a failure after `ms` with the message `why()` gives then: what never comes (a read, a
 * node's shutdown) must fail the test with what it waited for, not hold it until the runner's limit.
 */
export async function within<T>(p: Promise<T>, ms: number, why: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(why())), ms); });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
