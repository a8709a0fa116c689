import type { Clock } from '../../platform/clock.js';
import { TtlCache } from '../../platform/ttl-cache.js';
import type { DeviceOwner, ListedDevice } from '../../repositories/devices.repository.js';
import type { CustomersRepository } from '../../repositories/customers.repository.js';
import type { UsersRepository } from '../../repositories/users.repository.js';

/**
 * The names devices' owners are shown by: a user's username, a customer's e-mail. Lists are not
 * joined to customers (docs/architecture.md, "Fleets"): a customer's e-mail never changes (only
 * its password can), so it is remembered, and a customer reading its own devices does not read
 * its own row on every request. No write makes an entry wrong (a deleted customer's devices are
 * released with it, so its id is not shown again), so the entries are this node's own and no
 * other node hears of them (docs/architecture.md, "Caches in a cluster").
 */
export function createOwnerNames(deps: {
  customers: Pick<CustomersRepository, 'findByIds'>;
  users: Pick<UsersRepository, 'findById'>;
  clock: Clock;
}) {
  const customerEmails = new TtlCache<string>(deps.clock, 10 * 60_000, 100_000);
  return {
    /** Owners' names by `kind:id`; the customers' e-mails not remembered yet are read in one statement. */
    async of(devices: ListedDevice[]): Promise<Map<string, string>> {
      const names = new Map<string, string>();
      const missing = new Set<string>();
      for (const d of devices) {
        if (d.owner?.kind !== 'customer') continue;
        const email = customerEmails.get(d.owner.id);
        if (email === undefined) missing.add(d.owner.id);
        else names.set(`customer:${d.owner.id}`, email);
      }
      if (missing.size > 0) {
        for (const c of await deps.customers.findByIds([...missing])) {
          names.set(`customer:${c.id}`, c.email);
          customerEmails.set(c.id, c.email);
        }
      }
      for (const id of new Set(devices.flatMap((d) => (d.owner?.kind === 'user' ? [d.owner.id] : [])))) {
        const u = await deps.users.findById(id);
        if (u) names.set(`user:${id}`, u.username);
      }
      return names;
    },

    /** One owner's name (a webhook's PRODUCT_USER_ID), or null when it is gone. */
    async ofOwner(owner: DeviceOwner): Promise<string | null> {
      if (owner.kind === 'user') return (await deps.users.findById(owner.id))?.username ?? null;
      const cached = customerEmails.get(owner.id);
      if (cached !== undefined) return cached;
      const [c] = await deps.customers.findByIds([owner.id]);
      if (c) customerEmails.set(c.id, c.email);
      return c?.email ?? null;
    },
  };
}

export type OwnerNames = ReturnType<typeof createOwnerNames>;
