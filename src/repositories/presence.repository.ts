import type { Queryable } from '../storage/db.js';
import type { Hello } from '../domain/device-protocol.js';

/** One presence change of a device, as the gateway saw it. */
export interface PresenceChange {
  id: string;
  /** true on connect, false on disconnect, null when only last_heard moves. */
  online: boolean | null;
  at: Date;
  ip?: string | null;
}

/** The fields a `hello` sets; those it leaves out keep what an earlier one said. */
const definedOf = (hello: Hello): Partial<Hello> => Object.fromEntries(Object.entries(hello).filter(([, v]) => v !== undefined && v !== null)) as Partial<Hello>;

/**
 * Writes of the device gateway: presence (online, last_heard, last_handshake_at,
 * last_ip_address) in batches, and what a device says about itself (`hello`).
 */
export function createPresenceRepository(db: Queryable) {
  return {
    /** Applies many changes in one statement; for one device the last change of the batch wins. */
    async apply(changes: PresenceChange[]): Promise<void> {
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
      await db.query(
        `UPDATE devices d SET
           online = COALESCE(c.online, d.online),
           last_heard = GREATEST(COALESCE(d.last_heard, c.at), c.at),
           last_handshake_at = COALESCE(c.handshake, d.last_handshake_at),
           last_ip_address = COALESCE(c.ip, d.last_ip_address)
         FROM unnest($1::text[], $2::boolean[], $3::timestamptz[], $4::timestamptz[], $5::text[]) AS c(id, online, at, handshake, ip)
         WHERE d.id = c.id`,
        [rows.map((r) => r.id), rows.map((r) => r.online), rows.map((r) => r.at), rows.map((r) => r.connectedAt), rows.map((r) => r.ip)],
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

    /** At the start of a single-node cloud no device is connected, whatever the store says. */
    async markAllOffline(): Promise<void> {
      await db.query('UPDATE devices SET online = false WHERE online');
    },
  };
}

export type PresenceRepository = ReturnType<typeof createPresenceRepository>;
