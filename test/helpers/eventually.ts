/**
 * Polls until `f` answers something other than undefined, and answers it; fails after `ms`.
 * The one way the tests wait for something the cloud does on its own time (a delivery, a status
 * change). Waiting for something *not* to happen is never a sleep: the test sends a sentinel
 * after it, and once the sentinel is in, what did not arrive before it will not.
 */
export async function eventually<T>(f: () => Promise<T | undefined> | T | undefined, ms = 5000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`${what} not met in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
