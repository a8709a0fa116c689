import type { Change } from './diff.js';
import type { ModuleState } from './module-hash.js';
import type { OutOfRange, Source, Values } from './values.js';

/**
 * The configuration API's answers (docs/api.md, "Configuration"), shared by the services that
 * make them and the command line that reads them.
 */

/** Where one module of one device stands, and since when. */
export interface ModuleDelivery { state: ModuleState; desired_hash: string; held_hash: string | null; code: number | null; since: string | null }

/** GET /v1/products/:p/config/:deviceId: what the device confirmed and what it has yet to take. */
export interface DeviceConfigView {
  configuration: { current: Values; pending: Values };
  /** The device's own values, as written. */
  own: Values;
  sources: Record<string, Source>;
  rejected: Record<string, number>;
  delivery: Record<string, ModuleDelivery>;
  outside_firmware_range: OutOfRange[];
}

/** GET /v1/products/:p/config/rollout: how many devices (and modules) are in sync, pending, or refused by the device. */
export interface RolloutView {
  devices: number; in_sync: number; pending: number; pending_online: number; rejected: number;
  modules: Record<string, { in_sync: number; pending: number; rejected: number }>;
}

/** A values write with ?dry_run=true: the values it would leave, and the devices whose configuration would change. */
export interface PreviewView {
  dry_run: true;
  configuration: Values;
  devices: { changed: number; online: number; modules: Record<string, number> };
}

/** One change of a product's configuration history. */
export interface HistoryEntryView {
  version: number; kind: 'values' | 'schema'; device_id: string | null; action: 'write' | 'reset' | 'rollback';
  rolled_back_from: number | null; by: { kind: string; id: string; username?: string }; at: string;
}

/** GET …/config/history/:version: one change and the document it left in force. */
export type HistoryDocumentView = HistoryEntryView & { document: Record<string, unknown> };

/** GET …/config/:deviceId/explain: every setting of a device's effective configuration with its source. */
export interface ExplainView {
  development: boolean; device_values_win: boolean; firmware_version: number | null;
  modules: Record<string, Source>; settings: Array<{ path: string; value: unknown; source: Source }>; outside_firmware_range: OutOfRange[];
}

/** GET …/config/history/:version/diff */
export interface DiffView { from: number | null; to: number; kind: 'values' | 'schema'; device_id: string | null; changes: Change[] }
