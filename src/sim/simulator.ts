import { readFileSync } from 'node:fs';
import { createDevice, type Device, type DeviceOptions } from '../sdk/index.js';
import { defaultSchema } from '../domain/config/default-schema.js';
import { schemaModules } from './schema-modules.js';
import { emptyTally, NO_FAILURES, simulateUpdates, type UpdateFailures, type UpdateTally } from './updates.js';

export interface Identity { id: string; secret: string }

export interface SimulationOptions {
  mqttUrl: string;
  identities: Identity[];
  /** Connections opened at once (default 200). */
  concurrency?: number;
  /** Device OS version the simulated devices report. */
  systemFirmwareVersion?: string;
  /** A device not online after this long (ms, default 30 s) counts as failed and is closed. */
  connectTimeoutMs?: number;
  /** Aborting stops opening connections and closes the ones still connecting (Ctrl-C). */
  signal?: AbortSignal;
  /** The product firmware version the devices run when they start (none by default). */
  firmwareVersion?: number;
  /** Whether the devices take firmware updates when they start (default true). */
  updatesEnabled?: boolean;
  /** Shares of updates the devices fail (refuse, fail the check, never come back, come back on the old version). */
  updateFailures?: UpdateFailures;
  /** Draws the fate of each update (tests pass their own). */
  random?: () => number;
}

export interface SimulationProgress { connected: number; failed: number; total: number }

/** Whole devices per second, to one decimal: a slow cloud should not read as 0/s. */
const perSecond = (n: number, ms: number) => (ms > 0 ? Math.round((n / ms) * 10_000) / 10 : n);

export interface SimulationResult {
  total: number;
  connected: number;
  failed: number;
  /** Not tried because the run was aborted. */
  skipped: number;
  elapsedMs: number;
  /** Devices connected per second while connecting. */
  connectRate: number;
  errors: string[];
  devices: Device[];
  /** What the devices did with the firmware updates offered to them, counted as they happen. */
  updates: UpdateTally;
}

/**
 * One simulated device, not connected yet: the functions `led` (1 for "on", else 0) and `echo`
 * (the argument's length), the variables `temp` (double) and `uptime` (int32), and the
 * configuration modules of the default tracker schema, taking every value it allows (so a
 * product's settings reach it and show in sync). It takes firmware updates as simulateUpdates
 * says, failing the shares of `updates.failures`.
 */
export async function simulatedDevice(options: DeviceOptions, updates: { failures?: UpdateFailures; tally?: UpdateTally; random?: () => number } = {}): Promise<Device> {
  const device = createDevice(options);
  const bootedAt = Date.now();
  let temp = 20 + Math.random() * 5;
  device
    .function('led', (arg) => (arg === 'on' ? 1 : 0))
    .function('echo', (arg) => arg.length)
    .variable('temp', 'double', () => (temp += (Math.random() - 0.5) / 10))
    .variable('uptime', 'int32', () => Math.floor((Date.now() - bootedAt) / 1000));
  simulateUpdates(device, updates.failures ?? NO_FAILURES, updates.tally ?? emptyTally(), updates.random);
  for (const [name, bindings] of schemaModules(defaultSchema())) await device.configModule(name, bindings);
  return device;
}

/**
 * Connects simulated devices (simulatedDevice) with the SDK, a bounded number at a time. The
 * `skyport sim` command uses it. The devices in the result stay connected (and reconnect) until
 * the caller closes them.
 */
export async function runSimulation(options: SimulationOptions, hooks: { onProgress?: (p: SimulationProgress) => void } = {}): Promise<SimulationResult> {
  const total = options.identities.length;
  const devices: Device[] = [];
  const errors: string[] = [];
  let connected = 0;
  let failed = 0;
  let next = 0;
  const started = Date.now();
  const report = () => hooks.onProgress?.({ connected, failed, total });
  const connecting = new Set<Device>();
  const updates = emptyTally();
  const taking = { failures: options.updateFailures ?? NO_FAILURES, tally: updates, random: options.random };
  const abort = () => { for (const d of connecting) void d.close(); };
  options.signal?.addEventListener('abort', abort, { once: true });

  async function worker(): Promise<void> {
    while (next < total && !options.signal?.aborted) {
      const who = options.identities[next++] as Identity;
      const device = await simulatedDevice({
        url: options.mqttUrl, id: who.id, secret: who.secret, systemFirmwareVersion: options.systemFirmwareVersion ?? '5.8.0',
        firmwareVersion: options.firmwareVersion, updatesEnabled: options.updatesEnabled ?? true,
      }, taking);
      connecting.add(device);
      try {
        await device.connect({ timeoutMs: options.connectTimeoutMs ?? 30_000 });
        devices.push(device);
        connected++;
      } catch (err) {
        await device.close().catch(() => undefined);
        if (options.signal?.aborted) continue; // stopped by the caller, not refused: counted as skipped
        failed++;
        if (errors.length < 10) errors.push(`${who.id}: ${(err as Error).message}`);
      } finally {
        connecting.delete(device);
      }
      report();
    }
  }

  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 200, Math.max(1, total)) }, worker));
  options.signal?.removeEventListener('abort', abort);
  const elapsedMs = Date.now() - started;
  const skipped = total - connected - failed;
  return { total, connected, failed, skipped, elapsedMs, connectRate: perSecond(connected, elapsedMs), errors, devices, updates };
}

/** Reads identities from the CSV (`id,secret` or `device_id,device_secret` header) or JSON that provisioning writes. */
export function readIdentities(file: string): Identity[] {
  const text = readFileSync(file, 'utf8').trim();
  if (text.startsWith('[') || text.startsWith('{')) {
    const parsed = JSON.parse(text) as unknown;
    const list = Array.isArray(parsed) ? parsed : (parsed as { devices?: unknown[] }).devices ?? [];
    return list.map((d) => {
      const o = d as Record<string, string>;
      return { id: String(o.id), secret: String(o.device_secret ?? o.secret) };
    });
  }
  const [header, ...rows] = text.split(/\r?\n/);
  const cols = (header ?? '').split(',').map((c) => c.trim());
  const idCol = cols.findIndex((c) => c === 'id' || c === 'device_id');
  const secretCol = cols.findIndex((c) => c === 'secret' || c === 'device_secret');
  if (idCol < 0 || secretCol < 0) throw new Error(`${file}: the CSV needs an id (or device_id) and a secret (or device_secret) column`);
  return rows.filter((r) => r.trim() !== '').map((r) => {
    const cells = r.split(',');
    return { id: (cells[idCol] ?? '').trim(), secret: (cells[secretCol] ?? '').trim() };
  });
}
