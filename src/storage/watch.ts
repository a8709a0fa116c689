import type { Log } from '../platform/log.js';
import type { Clock } from '../platform/clock.js';
import type { Db, QueryOptions } from './db.js';
import { isStoreUnavailable } from './unavailable.js';

/**
 * Whether the store is reachable, as the node's own statements find it (docs/operations.md, "When
 * the store goes away"). A statement that fails as unavailable (unavailable.ts) marks it down:
 * one line in the log, not one per request, and the node's metrics say so. While it is down a
 * probe asks it every second, and the first statement or probe that succeeds marks it up again;
 * what was kept for later (presence, configuration delivery) is then done, through `whenBack`.
 */
export interface StoreWatch {
  state(): 'up' | 'down';
  /** Told each time the store answers again after it did not; returns the unsubscribe. */
  whenBack(listener: () => void): () => void;
  close(): void;
}

export interface WatchDeps {
  clock: Clock;
  log: () => Log;
  /** Told of each statement that failed because the store was unreachable (the node's metrics). */
  failed?: () => void;
  /** How often a store that is down is asked whether it is back (default 1 s). */
  probeMs?: number;
}

export function watchStore(db: Db, deps: WatchDeps): { db: Db; watch: StoreWatch } {
  const listeners = new Set<() => void>();
  let down: { since: number; failures: number; probe: NodeJS.Timeout } | null = null;

  const back = () => {
    if (!down) return;
    const { since, failures, probe } = down;
    down = null;
    clearInterval(probe);
    deps.log().info({ downSeconds: Math.round((deps.clock.nowMs() - since) / 100) / 10, failures }, 'storage is reachable again');
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (err) {
        deps.log().warn({ err }, 'catching up after a storage outage failed');
      }
    }
  };

  const failure = (err: unknown): never => {
    if (isStoreUnavailable(err)) {
      deps.failed?.();
      if (down) {
        down.failures += 1;
      } else {
        deps.log().warn({ err: err.cause }, 'storage is unreachable: requests that need it answer 503 until it is back');
        const probe = setInterval(() => { db.query('SELECT 1').then(back, () => undefined); }, deps.probeMs ?? 1_000);
        probe.unref();
        down = { since: deps.clock.nowMs(), failures: 1, probe };
      }
    }
    throw err;
  };
  const success = <T>(value: T): T => {
    if (down) back();
    return value;
  };

  const watched: Db = {
    ...db,
    kind: db.kind,
    query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => db.query<Row>(sql, params, options).then(success, failure),
    exec: (sql) => db.exec(sql).then(success, failure),
    transaction: (work) => db.transaction(work).then(success, failure),
    close: () => db.close(),
  };
  return {
    db: watched,
    watch: {
      state: () => (down ? 'down' : 'up'),
      whenBack(listener) {
        listeners.add(listener);
        return () => { listeners.delete(listener); };
      },
      close() {
        if (down) clearInterval(down.probe);
        down = null;
        listeners.clear();
      },
    },
  };
}
