import { createHash } from 'node:crypto';
import type { Values } from './values.js';

type Json = Record<string, unknown>;

/** The hash of a module's value that the cloud sends with it and the device reports back (docs/device-protocol.md, "Configuration"). */
export const moduleHash = (value: Json): string => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

/**
 * moduleHash remembered per module object: devices that take the same configuration share the
 * same objects (the configuration reader computes it once for them), so a fan-out hashes each
 * distinct value once.
 */
export function memoHash(): (value: Json) => string {
  const seen = new WeakMap<Json, string>();
  return (value) => {
    let h = seen.get(value);
    if (h === undefined) seen.set(value, (h = moduleHash(value)));
    return h;
  };
}

/** What the cloud has recorded of one module on a device: the hash it holds, or the hash it refused and the device's code. */
export interface HeldHash { hash: string | null; status: 'in_sync' | 'rejected'; refusedHash: string | null; code: number | null }

export type ModuleState = 'in_sync' | 'pending' | 'rejected';

/** Whether a device holds each module of `values`: in sync, pending, or refusing its current value. */
export function standing(values: Values, held: Map<string, HeldHash> | undefined, hashOf: (value: Json) => string = moduleHash): Record<string, ModuleState> {
  const out: Record<string, ModuleState> = {};
  for (const [module, value] of Object.entries(values)) {
    const hash = hashOf(value);
    const h = held?.get(module);
    out[module] = h?.status === 'in_sync' && h.hash === hash ? 'in_sync' : h?.status === 'rejected' && h.refusedHash === hash ? 'rejected' : 'pending';
  }
  return out;
}
