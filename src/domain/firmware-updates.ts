/**
 * Where a device's firmware update stands and what the cloud does next (docs/device-protocol.md,
 * "Firmware updates"), as pure rules. Which version a device should run is decided elsewhere (the
 * product's releases); these rules take it as given.
 */

export const UPDATE_STATES = ['pending', 'downloading', 'applying', 'succeeded', 'failed'] as const;
export type UpdateState = (typeof UPDATE_STATES)[number];

/** One device's update to one version, as the store keeps it. */
export interface UpdateRecord {
  deviceId: string;
  productId: number;
  version: number;
  state: UpdateState;
  size: number;
  /** Image bytes the cloud sent for this update, over all its transfers. */
  bytesSent: number;
  /** Of the image, the bytes the device acknowledged holding. */
  offset: number;
  error: string | null;
  rolloutId: number | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
}

/** Why the cloud itself counts an update failed (the device's own errors are its words). */
export const FAILURES = {
  /** The device came back, after it said `done`, running another version than the update's. */
  oldVersion: 'old_version',
  /** The device did not come back within FIRMWARE_UPDATE_TIMEOUT_SECONDS after it said `done`. */
  noReturn: 'no_return',
  /** The device, connected, answered nothing about a transfer for a while. */
  stalled: 'stalled',
  /** The device is not subscribed to the firmware topics: it cannot take an update over MQTT. */
  notSubscribed: 'not_subscribed',
  /** Its target changed while the image was on its way (a rollout's abort, another release): the transfer stopped. */
  superseded: 'superseded',
} as const;

/**
 * What becomes of the device's newest update when it says `hello` on a new connection: running
 * the update's version, it succeeded (whatever was recorded: truth wins over a time-out); back on
 * another version after it said `done`, it failed.
 */
export function outcomeOnReturn(newest: UpdateRecord | null, running: number | null): 'succeeded' | 'failed' | null {
  if (!newest || newest.state === 'succeeded') return null;
  if (running === newest.version) return 'succeeded';
  return newest.state === 'applying' ? 'failed' : null;
}

export interface OfferInput {
  /** The version the device should run, or null. */
  target: number | null;
  running: number | null;
  /** The device takes updates now; `forced`: the product makes it take them anyway. */
  enabled: boolean;
  forced: boolean;
  newest: UpdateRecord | null;
  /** A release names the device (or its product) again: an update that failed is tried again. */
  released: boolean;
}

/**
 * What the cloud does for a connected device: nothing; record the update `pending` until the
 * device takes updates again; `start` a transfer; or `resume` one that a dropped connection cut
 * (the device says how much it holds).
 */
export function nextStep(i: OfferInput): 'none' | 'pending' | 'start' | 'resume' {
  if (i.target === null || i.target === i.running) return 'none';
  const same = i.newest?.version === i.target ? i.newest : null;
  // Applied already: its outcome comes with the device's next connection.
  if (same?.state === 'applying') return 'none';
  // A failure is not repeated by itself on every reconnect: a new release tries again.
  if (same?.state === 'failed' && !i.released) return 'none';
  if (!i.enabled && !i.forced) return 'pending';
  return same?.state === 'downloading' ? 'resume' : 'start';
}

/** A version's updates counted by state (the console's and the CLI's progress). */
export interface VersionProgress {
  version: number;
  total: number;
  states: Record<UpdateState, number>;
}

/**
 * A product's updates counted by version and state (as the store groups them) into one record a
 * version, every state present, newest version first.
 */
export function progressByVersion(counts: ReadonlyArray<{ version: number; state: UpdateState; count: number }>): VersionProgress[] {
  const byVersion = new Map<number, VersionProgress>();
  for (const c of counts) {
    let v = byVersion.get(c.version);
    if (!v) {
      v = { version: c.version, total: 0, states: Object.fromEntries(UPDATE_STATES.map((s) => [s, 0])) as Record<UpdateState, number> };
      byVersion.set(c.version, v);
    }
    v.states[c.state] += c.count;
    v.total += c.count;
  }
  return [...byVersion.values()].sort((a, b) => b.version - a.version);
}
