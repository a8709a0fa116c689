import type { Bus } from '../bus/bus.js';
import { memoryTables, type SharedTable } from '../bus/shared.js';
import type { Settings } from '../config/settings.js';
import { FailureLimiter } from '../domain/failure-limiter.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';

/**
 * The limiter of failed logins and client authentications (`logins`) or of failed device
 * connects (`connects`), each with its own table on the bus: one every node shares, so that an
 * attacker gains nothing by spreading tries over nodes (docs/security.md, "Lock-out in a
 * cluster"). While that table is unreachable the node counts in its own memory: its limits hold,
 * and logins and device connects go on.
 */
export function createFailureLimiter(name: 'logins' | 'connects', deps: {
  bus: Bus;
  clock: Clock;
  settings: Pick<Settings, 'loginMaxFailures' | 'loginLockoutSeconds' | 'ipMaxFailures' | 'ipFailureWindowSeconds'>;
  log: () => Log;
}): FailureLimiter {
  const { bus, clock, settings } = deps;
  const options = {
    maxConsecutive: settings.loginMaxFailures,
    lockoutSeconds: settings.loginLockoutSeconds,
    maxPerWindow: settings.ipMaxFailures,
    windowSeconds: settings.ipFailureWindowSeconds,
  };
  const ttlMs = FailureLimiter.ttlMs(options);
  const local = memoryTables(clock);
  const index = indexOf(name, bus, clock, ttlMs);
  return new FailureLimiter(clock, options, {
    shared: async () => index.over(await bus.shared.table(name, ttlMs)),
    absent: (id) => index.absent(id),
    local: () => local.table(name, ttlMs),
    reachable: () => bus.state() === 'up',
    switched: (toLocal, err) => {
      if (toLocal) deps.log().warn({ err, limiter: name }, 'failure counters unreachable: counting on this node alone until they are back');
      else deps.log().info({ limiter: name }, 'failure counters shared again');
    },
  });
}

/**
 * Which keys of the shared table hold an entry, known on every node: a key nobody failed on
 * (nearly every login, client authentication and device connect) is answered from memory, with no
 * round trip to NATS. Every write is announced to all nodes (the notice `limits.<name>`), and a
 * node lists the table's keys when it first uses it and again whenever its bus comes back, so
 * that what was written while it was away is known. A failure counted on another node in the
 * last millisecond or so may not be known yet: a race the attacker cannot widen.
 */
function indexOf(name: string, bus: Bus, clock: Clock, ttlMs: number) {
  const known = new Map<string, number>();
  const note = (id: string) => known.set(id, clock.nowMs() + ttlMs);
  bus.listen(`limits.${name}`, (ids) => { if (Array.isArray(ids)) for (const id of ids) if (typeof id === 'string') note(id); });
  const holds = (id: string) => {
    const until = known.get(id);
    if (until === undefined) return false;
    if (until > clock.nowMs()) return true;
    known.delete(id);
    return false;
  };
  // The listing of the table's keys, under way or done; made again once the bus is back (the
  // notices of writes made meanwhile were missed).
  let listing: { done: boolean } | null = null;
  bus.whenBack(() => { listing = null; });
  const listed = (table: SharedTable): boolean => {
    if (listing === null) {
      const current = { done: false };
      listing = current;
      table.keys().then((ids) => { for (const id of ids) note(id); current.done = true; }, () => { if (listing === current) listing = null; });
    }
    return listing.done;
  };
  const written = (id: string) => {
    note(id);
    bus.notify(`limits.${name}`, [id]);
  };
  // One wrapper per table the bus hands out (the same table every time, until NATS reopens it).
  let wrapped: { table: SharedTable; over: SharedTable } | undefined;
  const over = (table: SharedTable): SharedTable => ({
    async get(id) {
      if (listed(table) && !holds(id)) return null;
      return table.get(id);
    },
    async swap(id, value, revision) {
      const done = await table.swap(id, value, revision);
      // Lost to a writer this node had not heard of yet: its next read asks the table.
      if (done) written(id);
      else note(id);
      return done;
    },
    async put(id, value) {
      await table.put(id, value);
      written(id);
    },
    delete: (id) => table.delete(id),
    keys: () => table.keys(),
  });
  return {
    over(table: SharedTable): SharedTable {
      if (wrapped?.table !== table) wrapped = { table, over: over(table) };
      return wrapped.over;
    },
    /** What `get` would answer at once: the table's keys are listed and `id` is not among those known. */
    absent: (id: string): boolean => listing?.done === true && !holds(id),
  };
}
