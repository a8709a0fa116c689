import type { Db, Queryable, Tx } from '../../src/storage/db.js';
import { storeUnavailable } from '../../src/storage/unavailable.js';

/**
 * A store that fails on demand, to show that a write of several statements is all or nothing:
 * `crashAt(pattern)` makes the next statement whose text matches `pattern` fail instead of
 * running, as if the process had died just before it. A write whose statements share one
 * transaction leaves nothing behind; a write that ran its first statements on their own leaves
 * them committed.
 */
export interface FaultyDb extends Db {
  /** `skip`: the statements matching `pattern` that run before the one that fails (default none). */
  crashAt(pattern: RegExp, skip?: number): void;
  /**
   * The next statement matching `pattern` (after `skip` that run) waits, before it runs, until
   * `release()`: a write held in the middle of its transaction, so that a test can send another
   * request meanwhile. `reached` resolves once it waits.
   */
  pauseAt(pattern: RegExp, skip?: number): { reached: Promise<void>; release(): void };
  /** Whether the armed crash happened (a test that arms one must see it, or it proves nothing). */
  readonly crashed: boolean;
  /**
   * While true, every statement and transaction fails as the adapters fail when the server
   * refuses connections (storage/unavailable.ts): the store has gone away.
   */
  unreachable: boolean;
  /** Resolves once a statement matching `pattern` has been refused as unreachable. */
  refusal(pattern: RegExp): Promise<void>;
}

export function faultyDb(db: Db): FaultyDb {
  let unreachable = false;
  const refused = () => storeUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
  const refusals: Array<{ pattern: RegExp; seen(): void }> = [];
  let armed: { pattern: RegExp; skip: number } | null = null;
  let crashed = false;
  let pause: { pattern: RegExp; skip: number; reached(): void; go: Promise<void> } | null = null;
  /** Whether `sql` is the armed statement, counting down the matches to let run first. */
  const hits = (at: { pattern: RegExp; skip: number } | null, sql: string) => at !== null && at.pattern.test(sql) && at.skip-- === 0;
  const check = async (sql: string) => {
    if (unreachable) {
      for (const r of refusals.filter((w) => w.pattern.test(sql))) {
        refusals.splice(refusals.indexOf(r), 1);
        r.seen();
      }
      throw refused();
    }
    if (hits(armed, sql)) {
      armed = null;
      crashed = true;
      throw Object.assign(new Error(`simulated crash before: ${sql.trim().split('\n')[0]}`), { code: 'XX000' });
    }
    if (pause && hits(pause, sql)) {
      const { reached, go } = pause;
      pause = null;
      reached();
      await go;
    }
  };
  const wrap = <Q extends Queryable>(q: Q): Q => ({
    ...q,
    query: async (sql: string, params?: readonly unknown[], options?: Parameters<Queryable['query']>[2]) => {
      await check(sql);
      return q.query(sql, params, options);
    },
    exec: async (sql: string) => {
      await check(sql);
      return q.exec(sql);
    },
  }) as Q;
  return {
    ...wrap(db),
    kind: db.kind,
    transaction: (work) => (unreachable ? Promise.reject(refused()) : db.transaction((tx: Tx) => work({ ...wrap(tx), afterCommit: tx.afterCommit }))),
    close: () => db.close(),
    crashAt(pattern, skip = 0) {
      armed = { pattern, skip };
      crashed = false;
    },
    pauseAt(pattern, skip = 0) {
      let reached: () => void = () => undefined;
      let release: () => void = () => undefined;
      const waiting = new Promise<void>((r) => { reached = r; });
      const go = new Promise<void>((r) => { release = r; });
      pause = { pattern, skip, reached, go };
      return { reached: waiting, release };
    },
    get crashed() {
      return crashed;
    },
    refusal(pattern) {
      return new Promise<void>((seen) => { refusals.push({ pattern, seen }); });
    },
    get unreachable() {
      return unreachable;
    },
    set unreachable(on: boolean) {
      unreachable = on;
    },
  };
}
