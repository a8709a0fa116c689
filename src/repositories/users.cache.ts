import type { Clock } from '../platform/clock.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { UserRecord, UsersRepository } from './users.repository.js';

/**
 * The users repository with reads by id served from memory: every authenticated user request
 * reads its account (GET /v1/user, product team checks), and the embedded store does about
 * 2,000 statements a second. Every write through this object drops the entry; callers that
 * write inside a transaction call `forget` again after it commits, so that a read racing the
 * commit cannot keep the old row. Other nodes see a change within `ttlMs`.
 */
export function cacheUsers(repo: UsersRepository, clock: Clock, ttlMs = 30_000): UsersRepository & { forget(id: string): void } {
  const cache = new TtlCache<UserRecord>(clock, ttlMs);
  const forget = (id: string) => cache.delete(id);
  return {
    ...repo,
    forget,
    async findById(id, q) {
      if (q !== undefined) return repo.findById(id, q);
      const hit = cache.get(id);
      if (hit) return hit;
      const found = await repo.findById(id);
      if (found) cache.set(id, found);
      return found;
    },
    async update(id, change, at, q) {
      forget(id);
      try {
        return await repo.update(id, change, at, q);
      } finally {
        forget(id);
      }
    },
    async setMfa(id, secret, lastStep, at, q) {
      forget(id);
      await repo.setMfa(id, secret, lastStep, at, q);
      forget(id);
    },
    async advanceMfaStep(id, step, q) {
      forget(id);
      const advanced = await repo.advanceMfaStep(id, step, q);
      forget(id);
      return advanced;
    },
    async delete(id, q) {
      forget(id);
      await repo.delete(id, q);
      forget(id);
    },
  };
}

export type CachedUsersRepository = ReturnType<typeof cacheUsers>;
