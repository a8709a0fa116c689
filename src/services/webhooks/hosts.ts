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

interface Host { inFlight: number; outcomes: Array<{ at: number; ok: boolean }>; sleepingUntil: number }

export function createHosts(options: HostOptions = HOST_DEFAULTS) {
  const hosts = new Map<string, Host>();
  const host = (name: string): Host => {
    let h = hosts.get(name);
    if (!h) hosts.set(name, (h = { inFlight: 0, outcomes: [], sleepingUntil: 0 }));
    return h;
  };
  const forget = (name: string, h: Host) => {
    if (h.inFlight === 0 && h.outcomes.length === 0 && h.sleepingUntil === 0) hosts.delete(name);
  };
  return {
    /** Until when the host sleeps (ms), or 0 when deliveries may go to it now. */
    sleepingUntil(name: string, now: number): number {
      const h = hosts.get(name);
      return h && h.sleepingUntil > now ? h.sleepingUntil : 0;
    },
    hasRoom: (name: string) => (hosts.get(name)?.inFlight ?? 0) < options.concurrency,
    start(name: string): void { host(name).inFlight += 1; },
    /** One delivery to the host ended; answers whether the host now sleeps. */
    finish(name: string, ok: boolean, now: number): boolean {
      const h = host(name);
      h.inFlight -= 1;
      h.outcomes.push({ at: now, ok });
      while (h.outcomes.length > 0 && (h.outcomes[0] as { at: number }).at < now - options.windowMs) h.outcomes.shift();
      if (ok) {
        forget(name, h);
        return false;
      }
      const errors = h.outcomes.filter((o) => !o.ok).length;
      if (errors >= options.minErrors && errors > h.outcomes.length - errors && h.sleepingUntil <= now) {
        h.sleepingUntil = now + options.sleepMs;
        h.outcomes = [];
        return true;
      }
      return false;
    },
    wake(name: string): void {
      const h = hosts.get(name);
      if (!h) return;
      h.sleepingUntil = 0;
      forget(name, h);
    },
  };
}

export type Hosts = ReturnType<typeof createHosts>;
