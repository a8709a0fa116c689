/**
 * Per destination host: how many deliveries are in flight (bounded, so that one slow host cannot
 * take every slot), and Particle's "too many errors" rule: when a host's recent errors outnumber
 * its successes, deliveries to it wait a few seconds instead of piling on (docs/webhooks.md,
 * "Retries").
 */
export interface HostOptions {
  /** Deliveries in flight to one host at most. */
  concurrency: number;
  /** The window errors and successes are counted over. */
  windowMs: number;
  /** Fewer errors than this in the window never put a host to sleep. */
  minErrors: number;
  sleepMs: number;
}

export const HOST_DEFAULTS: HostOptions = { concurrency: 32, windowMs: 30_000, minErrors: 5, sleepMs: 10_000 };

/**
 * Outcomes are counted in buckets of a thirtieth of the window (a second of the default 30):
 * one entry per outcome made every delivery to a busy host shift an array of the window's
 * thousands of outcomes (docs/benchmarks.md, "Webhooks").
 */
interface Bucket { at: number; ok: number; errors: number }
/**
 * `probing`: the host slept and has not answered 2xx since. Its backlog in the store is then
 * taken a delivery at a time (a probe, as a circuit breaker's half-open state), not a poll's
 * room: at each wake of a receiver still down, the poll took hundreds of its due deliveries, only
 * to skip them again once five failures put the host back to sleep, a burst of writes that the
 * other webhooks' deliveries waited behind (docs/benchmarks.md, "Webhooks").
 */
interface Host { inFlight: number; buckets: Bucket[]; ok: number; errors: number; sleepingUntil: number; probing: boolean }

export function createHosts(options: HostOptions = HOST_DEFAULTS) {
  const hosts = new Map<string, Host>();
  const bucketMs = Math.max(1, Math.floor(options.windowMs / 30));
  const host = (name: string): Host => {
    let h = hosts.get(name);
    if (!h) hosts.set(name, (h = { inFlight: 0, buckets: [], ok: 0, errors: 0, sleepingUntil: 0, probing: false }));
    return h;
  };
  const namesWhere = (test: (h: Host) => boolean): Set<string> => {
    const out = new Set<string>();
    for (const [name, h] of hosts) if (test(h)) out.add(name);
    return out;
  };
  const forget = (name: string, h: Host) => {
    if (h.inFlight === 0 && h.buckets.length === 0 && h.sleepingUntil === 0 && !h.probing) hosts.delete(name);
  };
  return {
    /** Until when the host sleeps (ms), or 0 when deliveries may go to it now. */
    sleepingUntil(name: string, now: number): number {
      const h = hosts.get(name);
      return h && h.sleepingUntil > now ? h.sleepingUntil : 0;
    },
    /** The hosts that sleep now (their deliveries stay in the store until they wake). */
    sleeping: (now: number) => namesWhere((h) => h.sleepingUntil > now),
    /** The hosts awake again after a sleep that have not answered 2xx since. */
    probing: (now: number) => namesWhere((h) => h.probing && h.sleepingUntil <= now),
    isProbing: (name: string) => hosts.get(name)?.probing ?? false,
    hasRoom: (name: string) => (hosts.get(name)?.inFlight ?? 0) < options.concurrency,
    start(name: string): void { host(name).inFlight += 1; },
    /** One delivery to the host ended; answers whether the host now sleeps. */
    finish(name: string, ok: boolean, now: number): boolean {
      const h = host(name);
      h.inFlight -= 1;
      // A bucket goes once all of it is older than the window.
      while (h.buckets.length > 0 && (h.buckets[0] as Bucket).at + bucketMs <= now - options.windowMs) {
        const gone = h.buckets.shift() as Bucket;
        h.ok -= gone.ok;
        h.errors -= gone.errors;
      }
      const at = now - (now % bucketMs);
      let last = h.buckets.at(-1);
      if (!last || last.at !== at) h.buckets.push((last = { at, ok: 0, errors: 0 }));
      if (ok) {
        last.ok += 1;
        h.ok += 1;
        h.probing = false;
        forget(name, h);
        return false;
      }
      last.errors += 1;
      h.errors += 1;
      if (h.errors >= options.minErrors && h.errors > h.ok && h.sleepingUntil <= now) {
        h.sleepingUntil = now + options.sleepMs;
        h.probing = true;
        h.buckets = [];
        h.ok = 0;
        h.errors = 0;
        return true;
      }
      return false;
    },
  };
}

export type Hosts = ReturnType<typeof createHosts>;
