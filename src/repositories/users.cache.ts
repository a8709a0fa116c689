import type { CacheHub } from '../platform/cache-hub.js';
import { afterCommit, type Queryable } from '../storage/db.js';
import type { UserRecord, UsersRepository } from './users.repository.js';

/**
 * The users repository with reads by id served from memory: every authenticated user request reads
 * its account (GET /v1/user, product team checks), and the embedded store runs its statements one
 * at a time on one connection (docs/benchmarks.md, "Measurements behind design choices"). Every
 * write through this object drops the entry once it has committed (after its transaction's COMMIT
 * when it is part of one), on every node (docs/architecture.md, "Caches in a cluster"), and a
 * read that raced a write is not kept, so the old row is not served after the change.
 */
export function cacheUsers(repo: UsersRepository, caches: CacheHub, ttlMs = 30_000): UsersRepository & { forget(id: string): void } {
  const cache = caches.cache<UserRecord>('users', ttlMs);
  const forget = (id: string) => cache.delete(id);
  /** Runs a write of `id`'s row, then forgets the row once the write has committed. */
  async function writing<T>(id: string, q: Queryable | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      if (q === undefined) forget(id);
      else afterCommit(q, () => forget(id));
    }
  }
  return {
    ...repo,
    forget,
    async findById(id, q) {
      if (q !== undefined) return repo.findById(id, q);
      return cache.load(id, () => repo.findById(id));
    },
    update: (id, change, at, q) => writing(id, q, () => repo.update(id, change, at, q)),
    setMfa: (id, secret, lastStep, at, q) => writing(id, q, () => repo.setMfa(id, secret, lastStep, at, q)),
    advanceMfaStep: (id, step, q) => writing(id, q, () => repo.advanceMfaStep(id, step, q)),
    delete: (id, q) => writing(id, q, () => repo.delete(id, q)),
  };
}

export type CachedUsersRepository = ReturnType<typeof cacheUsers>;
