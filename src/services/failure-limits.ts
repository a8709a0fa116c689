import type { Bus } from '../bus/bus.js';
import { memoryTables } from '../bus/shared.js';
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
  return new FailureLimiter(clock, options, {
    shared: () => bus.shared.table(name, ttlMs),
    local: () => local.table(name, ttlMs),
    reachable: () => bus.state() === 'up',
    switched: (toLocal, err) => {
      if (toLocal) deps.log().warn({ err, limiter: name }, 'failure counters unreachable: counting on this node alone until they are back');
      else deps.log().info({ limiter: name }, 'failure counters shared again');
    },
  });
}
