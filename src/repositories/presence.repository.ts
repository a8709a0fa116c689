import type { Queryable } from '../storage/db.js';
import type { Hello } from '../domain/device-protocol.js';
import { toScope, type DeviceScope, type ScopeRow } from './devices.repository.js';

/** One presence change of a device, as the gateway saw it. */
export interface PresenceChange {
  id: string;
  /** true on connect, false on disconnect, null when only last_heard moves. */
  online: boolean | null;
  at: Date;
  ip?: string | null;
}

/**
 * A time read from the store's clock, as ISO 8601 text to the microsecond, to be handed back to
 * it. As a JS Date it would lose its microseconds: a device heard of in the same millisecond,
 * just before the leader's check read the store, would count as heard of after it.
 */
export type StoreTime = string;
const STORE_NOW = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The fields a `hello` sets; those it leaves out keep what an earlier one said. */
const definedOf = (hello: Hello): Partial<Hello> => Object.fromEntries(Object.entries(hello).filter(([, v]) => v !== undefined && v !== null)) as Partial<Hello>;

/**
 * Writes of the device gateway: presence (online, the node that holds or last held the
 * connection, last_heard, last_handshake_at, last_ip_address) in batches, and what a device says
 * about itself (`hello`).
 *
 * A disconnect leaves the row naming its node: the column is indexed for the leader's check
 * (migrations/0020_presence_in_place.sql), and a write that changes no indexed column is made in
 * place, so a device that reconnects to the same node costs no index entry. Whether the device is
 * online is `online` alone.
 */
export function createPresenceRepository(db: Queryable) {
  return {
    /**
     * Applies many changes of this node's gateway (`node`, docs/architecture.md, "Presence and
     * node leases") in one statement; for one device the last change of the batch wins. A connect
     * names this node, unless the row already names another node for a newer connect (the
     * device moved on before this batch was written); a disconnect applies only while the row
     * names this node (or none): a device that reconnected elsewhere meanwhile stays online.
     */
    async apply(changes: PresenceChange[], node: string): Promise<void> {
      if (changes.length === 0) return;
      const last = new Map<string, PresenceChange & { connectedAt: Date | null; ip: string | null }>();
      for (const c of changes) {
        const prev = last.get(c.id);
        const connectedAt = c.online === true ? c.at : (prev?.connectedAt ?? null);
        const ip = c.online === true ? (c.ip ?? null) : (prev?.ip ?? null);
        const online = c.online ?? prev?.online ?? null;
        last.set(c.id, { ...c, online, connectedAt, ip });
      }
      const rows = [...last.values()];
      // Whether this batch's connect is the device's newest (the row is this node's, offline, or
      // names another node for an older connect); and whether the row is this node's to change.
      const claims = '(c.handshake IS NOT NULL AND (NOT d.online OR d.node_id IS NULL OR d.node_id = $6 OR d.last_handshake_at IS NULL OR c.handshake >= d.last_handshake_at))';
      const ours = `(${claims} OR d.node_id IS NULL OR d.node_id = $6)`;
      await db.query(
        `UPDATE devices d SET
           online = CASE WHEN c.online IS NULL OR NOT ${ours} THEN d.online ELSE c.online END,
           node_id = CASE WHEN c.online IS NULL OR NOT ${ours} THEN d.node_id WHEN c.online THEN $6 ELSE d.node_id END,
           last_heard = GREATEST(COALESCE(d.last_heard, c.at), c.at),
           last_handshake_at = CASE WHEN ${claims} THEN c.handshake ELSE d.last_handshake_at END,
           last_ip_address = CASE WHEN ${claims} THEN COALESCE(c.ip, d.last_ip_address) ELSE d.last_ip_address END
         FROM unnest($1::text[], $2::boolean[], $3::timestamptz[], $4::timestamptz[], $5::text[]) AS c(id, online, at, handshake, ip)
         WHERE d.id = c.id`,
        [rows.map((r) => r.id), rows.map((r) => r.online), rows.map((r) => r.at), rows.map((r) => r.connectedAt), rows.map((r) => r.ip), node],
      );
    },

    /**
     * What devices said about themselves (`hello`), many in one statement; for one device the
     * later `hello` of a batch wins field by field, as if they had been applied in turn.
     */
    async describeMany(hellos: Array<{ id: string; hello: Hello; at: Date }>): Promise<void> {
      if (hellos.length === 0) return;
      const last = new Map<string, { id: string; hello: Hello; at: Date }>();
      for (const h of hellos) {
        const prev = last.get(h.id);
        last.set(h.id, prev ? { id: h.id, at: h.at, hello: { ...prev.hello, ...definedOf(h.hello) } } : h);
      }
      const rows = [...last.values()];
      await db.query(
        `UPDATE devices d SET
           functions = COALESCE(c.functions::jsonb, d.functions),
           variables = COALESCE(c.variables::jsonb, d.variables),
           firmware_version = COALESCE(c.firmware, d.firmware_version),
           system_firmware_version = COALESCE(c.system, d.system_firmware_version),
           updated_at = c.at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::timestamptz[]) AS c(id, functions, variables, firmware, system, at)
         WHERE d.id = c.id`,
        [rows.map((r) => r.id), rows.map((r) => (r.hello.functions ? JSON.stringify(r.hello.functions) : null)),
          rows.map((r) => (r.hello.variables ? JSON.stringify(r.hello.variables) : null)), rows.map((r) => r.hello.firmwareVersion ?? null),
          rows.map((r) => r.hello.systemFirmwareVersion ?? null), rows.map((r) => r.at)],
      );
    },

    /**
     * At the start of a single-node cloud no device is connected, whatever the store says (its
     * last run was killed). The rows keep naming the node, as a disconnect leaves them: a single
     * node's name does not change between runs, so the reconnects that follow change no indexed
     * column and are written in place (docs/architecture.md, "Presence and node leases").
     */
    async markAllOffline(): Promise<void> {
      await db.query('UPDATE devices SET online = false WHERE online');
    },

    /**
     * The nodes that rows name (those holding online devices among them), and the store's time
     * when it read them. One index probe per node, however many devices. A node that is gone is
     * named by no row once the leader has released it (`release`).
     */
    async namedNodes(): Promise<{ nodes: string[]; at: StoreTime }> {
      const rows = await db.query<{ node_id: string; at: string }>(
        `WITH RECURSIVE n(node_id) AS (
           (SELECT node_id FROM devices WHERE node_id IS NOT NULL ORDER BY node_id LIMIT 1)
           UNION ALL
           SELECT (SELECT node_id FROM devices WHERE node_id > n.node_id ORDER BY node_id LIMIT 1) FROM n WHERE n.node_id IS NOT NULL
         )
         SELECT node_id, ${STORE_NOW} AS at FROM n WHERE node_id IS NOT NULL`,
      );
      return { nodes: rows.map((r) => r.node_id), at: rows[0]?.at ?? '1970-01-01T00:00:00.000000Z' };
    },

    /**
     * Sets offline the devices whose rows name one of `nodes`, nodes that are gone, and leaves
     * every row of theirs naming none. With `heardBefore`, an online device heard of since then
     * is left as it is: a node that said its devices again since (`reassert`) keeps them.
     * Answers the devices that were online, with their scope (for their presence events).
     */
    async release(nodes: string[], heardBefore?: StoreTime): Promise<DeviceScope[]> {
      const rows = await db.query<ScopeRow & { was: boolean }>(
        `WITH gone AS (
           SELECT id, online AS was FROM devices
           WHERE node_id = ANY($1::text[])
             AND (NOT online OR $2::timestamptz IS NULL OR last_heard IS NULL OR last_heard < $2::timestamptz)
           ORDER BY id FOR UPDATE
         )
         UPDATE devices d SET online = false, node_id = NULL
         FROM gone WHERE d.id = gone.id
         RETURNING d.id, d.owner_kind, d.owner_id, d.product_id, gone.was`,
        [nodes, heardBefore ?? null],
      );
      return rows.filter((r) => r.was).map(toScope);
    },

    /**
     * Sets offline the devices that the store says `node` holds, leaving them named: the node
     * starts again under the same name, and its devices' reconnects then write in place. Answers
     * those devices, with their scope.
     */
    async releaseOwn(node: string): Promise<DeviceScope[]> {
      const rows = await db.query<ScopeRow>(
        'UPDATE devices SET online = false WHERE node_id = $1 AND online RETURNING id, owner_kind, owner_id, product_id',
        [node],
      );
      return rows.map(toScope);
    },

    /**
     * A node whose lease had lapsed says again which devices it holds: those of `ids` that the
     * store says are offline, or online on this node, are online on `node`, heard of now (by the
     * store's clock: a leader's check that read the lease before it was written again leaves
     * them, see `release`). A device online on another node (it reconnected there) is left
     * alone. Answers the devices that were offline.
     */
    async reassert(node: string, ids: string[]): Promise<DeviceScope[]> {
      if (ids.length === 0) return [];
      const rows = await db.query<ScopeRow & { was: boolean }>(
        `WITH held AS (
           SELECT id, online AS was FROM devices
           WHERE id = ANY($2::text[]) AND (NOT online OR node_id = $1)
           ORDER BY id FOR UPDATE
         )
         UPDATE devices d SET online = true, node_id = $1, last_heard = GREATEST(d.last_heard, now())
         FROM held WHERE d.id = held.id
         RETURNING d.id, d.owner_kind, d.owner_id, d.product_id, held.was`,
        [node, ids],
      );
      return rows.filter((r) => !r.was).map(toScope);
    },
  };
}

export type PresenceRepository = ReturnType<typeof createPresenceRepository>;
