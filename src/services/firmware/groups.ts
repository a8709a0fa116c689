import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import { MAX_DESCRIPTION_LENGTH, parseGroupNames, validateColor, validateGroupName, validateText } from '../../domain/firmware.js';
import type { Clock } from '../../platform/clock.js';
import type { DeviceGroupsRepository, GroupRecord } from '../../repositories/device-groups.repository.js';
import type { DeviceRecord } from '../../repositories/devices.repository.js';
import type { FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { Db, Tx } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import type { Actor } from './shared.js';
import type { Targets } from './targets.js';

/** A group as Particle answers it (`fw_version`: the version released to it), with Skyport's times (schema `DeviceGroup`). */
export const GroupViewSchema = Type.Object({
  name: Type.String(), description: Type.String(), color: Type.Unsafe<string | null>({ type: 'string', nullable: true }),
  fw_version: Type.Unsafe<number | null>({ type: 'integer', nullable: true }), device_count: Type.Integer(), created_at: Type.String(), updated_at: Type.String(),
}, { $id: 'DeviceGroup' });

export type GroupView = Static<typeof GroupViewSchema>;

export const groupView = (g: GroupRecord): GroupView => ({
  name: g.name, description: g.description, color: g.color, fw_version: g.firmwareVersion, device_count: g.deviceCount,
  created_at: g.createdAt.toISOString(), updated_at: g.updatedAt.toISOString(),
});

const BULK_MAX_DEVICES = 10_000;

/**
 * Device groups (docs/firmware.md, "Groups"): the product's groups, and which devices are in
 * them. A change of a device's groups may change the version it should run: once committed,
 * every node is told (targets.ts).
 */
export function createGroups(deps: { db: Db; repo: DeviceGroupsRepository; firmware: FirmwareRepository; targets: Targets; clock: Clock; audit: AuditService }) {
  const { repo, clock } = deps;

  async function find(product: ProductRecord, name: string): Promise<GroupRecord> {
    const g = await repo.find(product.id, name);
    if (!g) throw new DomainError('not_found', `The product has no group "${name}"`);
    return g;
  }

  /**
   * Once a change of these devices' groups has committed: every node re-checks their targets, at
   * once when one of them is now given an intelligently released version. Read after the commit,
   * outside the transaction (the embedded store's one session is the transaction's until then).
   */
  function changed(tx: Tx, productId: number, deviceIds: string[]): void {
    if (deviceIds.length === 0) return;
    tx.afterCommit(() => {
      void (async () => {
        const intelligent = new Set((await deps.firmware.list(productId)).filter((f) => f.intelligent).map((f) => f.version));
        const targets = await deps.targets.targetsFor(deviceIds);
        return [...targets.values()].some((t) => t !== null && intelligent.has(t.version));
      })().catch(() => false).then((immediate) => deps.targets.notify({ productId, deviceIds, immediate, cause: 'groups' }));
    });
  }

  const audit = (actor: Actor, type: 'group.created' | 'group.updated' | 'group.deleted' | 'device.groups_changed', details: Record<string, unknown>, tx?: Tx) =>
    deps.audit.record({ account: actor.account, type, ip: actor.ip, details }, tx);

  return {
    find,
    get: async (product: ProductRecord, name: string): Promise<GroupView> => groupView(await find(product, name)),
    list: async (product: ProductRecord, contains?: string): Promise<GroupView[]> => (await repo.list(product.id, contains)).map(groupView),

    async create(product: ProductRecord, body: { name?: unknown; color?: unknown; description?: unknown }, actor: Actor): Promise<GroupView> {
      const g = {
        name: validateGroupName(body.name), color: validateColor(body.color ?? null),
        description: validateText(body.description, 'description', MAX_DESCRIPTION_LENGTH),
      };
      const made = await repo.create(product.id, g, clock.now());
      if (!made) throw new DomainError('conflict', `The product has a group "${g.name}" already`);
      deps.targets.groupMade(product.id);
      await audit(actor, 'group.created', { product_id: product.id, group: g.name });
      return groupView(made);
    },

    async edit(product: ProductRecord, name: string, body: { name?: unknown; color?: unknown; description?: unknown }, actor: Actor): Promise<GroupView> {
      const g = await find(product, name);
      const change: { name?: string; color?: string | null; description?: string } = {};
      if (body.name !== undefined) change.name = validateGroupName(body.name);
      if (body.color !== undefined) change.color = validateColor(body.color);
      if (body.description !== undefined) change.description = validateText(body.description, 'description', MAX_DESCRIPTION_LENGTH);
      if (Object.keys(change).length === 0) throw new DomainError('invalid_request', 'Nothing to change: send name, color or description');
      const outcome = await repo.update(g.id, change, clock.now());
      if (outcome === 'taken') throw new DomainError('conflict', `The product has a group "${change.name}" already`);
      if (outcome === 'gone') throw new DomainError('not_found', `The product has no group "${name}"`);
      await audit(actor, 'group.updated', { product_id: product.id, group: name, ...(change.name && change.name !== name ? { renamed_to: change.name } : {}) });
      return groupView(await find(product, change.name ?? name));
    },

    /** Deletes a group; its devices leave it (and lose its release, when it had one). */
    async remove(product: ProductRecord, name: string, actor: Actor): Promise<void> {
      await deps.db.transaction(async (tx) => {
        const g = await repo.find(product.id, name, tx);
        if (!g) throw new DomainError('not_found', `The product has no group "${name}"`);
        const members = await repo.delete(g.id, tx);
        await audit(actor, 'group.deleted', { product_id: product.id, group: name, devices: members.length }, tx);
        if (g.firmwareVersion !== null) changed(tx, product.id, members);
      });
    },

    /** PUT /v1/products/:p/devices/:id {groups}: the device's groups become exactly these; names the product lacks are created. */
    async setDeviceGroups(product: ProductRecord, d: DeviceRecord, value: unknown, actor: Actor): Promise<string[]> {
      const names = parseGroupNames(value);
      return deps.db.transaction(async (tx) => {
        if ((await repo.productDevices(product.id, [d.id], tx)).length === 0) throw new DomainError('not_found', 'Device not found for this product');
        const { groups, created } = await repo.ensure(product.id, names, clock.now(), tx);
        if (created.length > 0) tx.afterCommit(() => deps.targets.groupMade(product.id));
        const before = await repo.groupIdsOf(d.id, tx);
        await repo.setDeviceGroups(d.id, groups.map((g) => g.id), tx);
        await audit(actor, 'device.groups_changed', { product_id: product.id, device_id: d.id, groups: names, ...(created.length ? { created } : {}) }, tx);
        const after = groups.map((g) => g.id).sort((a, b) => a - b);
        if (before.join() !== after.join()) changed(tx, product.id, [d.id]);
        return groups.map((g) => g.name);
      });
    },

    /**
     * PUT /v1/products/:p/devices {action:"groups", devices, metadata:{add, remove}}: groups added
     * to (created when new) and removed from many devices at once; all of them must be in the
     * product, or nothing changes.
     */
    async bulk(product: ProductRecord, body: { action?: unknown; devices?: unknown; metadata?: unknown }, actor: Actor): Promise<void> {
      if (body.action !== 'groups') throw new DomainError('invalid_request', 'action must be "groups" (the one bulk action this server has)');
      const ids = body.devices;
      if (!Array.isArray(ids) || ids.length === 0 || ids.length > BULK_MAX_DEVICES || !ids.every((x) => typeof x === 'string' && /^[0-9a-fA-F]{24}$/.test(x))) {
        throw new DomainError('invalid_request', `devices must be a list of 1 to ${BULK_MAX_DEVICES} device ids (24 hex digits)`);
      }
      const meta = (body.metadata ?? {}) as { add?: unknown; remove?: unknown };
      if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw new DomainError('invalid_request', 'metadata must be {add: [names], remove: [names]}');
      const add = parseGroupNames(meta.add, 'metadata.add');
      const remove = parseGroupNames(meta.remove, 'metadata.remove');
      if (add.length + remove.length === 0) throw new DomainError('invalid_request', 'Nothing to change: send metadata.add or metadata.remove, lists of group names');
      const both = add.filter((n) => remove.includes(n));
      if (both.length > 0) throw new DomainError('invalid_request', `A group is both added and removed: ${both.join(', ')}`);
      const wanted = [...new Set(ids.map((x) => (x as string).toLowerCase()))];
      await deps.db.transaction(async (tx) => {
        const found = new Set(await repo.productDevices(product.id, wanted, tx));
        const outside = wanted.filter((id) => !found.has(id));
        if (outside.length > 0) throw new DomainError('invalid_request', `Not devices of this product: ${outside.slice(0, 20).join(', ')}${outside.length > 20 ? ` and ${outside.length - 20} more` : ''}`, { details: { invalid_device_ids: outside } });
        const { groups, created } = await repo.ensure(product.id, add, clock.now(), tx);
        if (created.length > 0) tx.afterCommit(() => deps.targets.groupMade(product.id));
        const removed = await repo.findMany(product.id, remove, tx);
        await repo.addMembers(wanted, groups.map((g) => g.id), tx);
        await repo.removeMembers(wanted, removed.map((g) => g.id), tx);
        await audit(actor, 'device.groups_changed', { product_id: product.id, devices: wanted.length, added: add, removed: remove, ...(created.length ? { created } : {}) }, tx);
        changed(tx, product.id, wanted);
      });
    },
  };
}

export type Groups = ReturnType<typeof createGroups>;
