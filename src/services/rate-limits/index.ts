import type { Bus } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import { RequestCounts } from './requests.js';
import { OpenStreams } from './streams.js';

/**
 * The per-address limits on request volume (docs/security.md, "Limits on request volume"): the
 * counting only; src/http/rate-limits.ts applies them to requests.
 */
export { RequestCounts } from './requests.js';
export { OpenStreams } from './streams.js';
export type { Tally } from './windows.js';

/** The limits counted in windows. */
export type WindowLimit = 'requests' | 'eventStreams' | 'tokens';

/**
 * The key under which a limit counts an address: the address alone for the limit on all
 * requests (no string to make on every request), the limit's name before it for the others (an
 * address has no space).
 */
export const limitKey = (limit: WindowLimit, address: string): string => (limit === 'requests' ? address : `${limit} ${address}`);

/** At most this many keys per window: under a spray of addresses, memory stays bounded (about 10 MB). */
export const MAX_KEYS = 100_000;

export interface RateLimits {
  readonly requests: RequestCounts;
  readonly streams: OpenStreams;
  close(): void;
}

/**
 * The counters of one node. `shared`: in a cluster, counts and open streams are summed over the
 * nodes through the bus's notices; open-stream gauges are sent again every third of
 * `leaseSeconds` and lapse after it, as a node's lease does.
 */
export function createRateLimits(deps: { clock: Clock; bus: Bus; shared: boolean; leaseSeconds: number; maxKeys?: number }): RateLimits {
  const bus = deps.shared ? deps.bus : undefined;
  const requests = new RequestCounts(deps.clock, deps.maxKeys ?? MAX_KEYS, bus);
  const lifetimeMs = deps.leaseSeconds * 1000;
  const streams = new OpenStreams(deps.clock, bus ? { bus, refreshMs: Math.max(100, Math.floor(lifetimeMs / 3)), lifetimeMs } : undefined);
  return {
    requests,
    streams,
    close() {
      requests.close();
      streams.close();
    },
  };
}
