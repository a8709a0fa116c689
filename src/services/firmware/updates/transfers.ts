import { UPDATES_DISABLED, type OtaMessage } from '../../../domain/ota-protocol.js';
import { FAILURES, type UpdateRecord } from '../../../domain/firmware-updates.js';
import type { Clock } from '../../../platform/clock.js';
import type { Log } from '../../../platform/log.js';
import type { Secrets } from '../../../platform/secrets.js';
import type { HeldImage, ImageCache } from './image-cache.js';
import type { UpdateRecords } from './records.js';
import type { FirmwareTarget } from './source.js';
import { Transfer, type OtaLink } from './transfer.js';

/** A connected device that answers nothing about its transfer for this long has stalled it (by the clock). */
export const STALL_MS = 60_000;

/** The devices connected to this node, as transfers reach them (the gateway). */
export interface FirmwareLinks {
  holds(deviceId: string): boolean;
  /** The devices of a product connected here. */
  heldIn(productId: number): string[];
  /** The device's connection here now, or null. */
  link(deviceId: string): OtaLink | null;
}

/** What the device is told on `cloud/error` when something it sent about a transfer is refused. */
export type Refusal = { error: string; message: string };

interface Active {
  deviceId: string;
  target: FirmwareTarget;
  /** The product forces updates: the offer says so. */
  forced: boolean;
  link: OtaLink;
  /** The update's row as last written; null until the transfer is recorded as started. */
  record: UpdateRecord | null;
  image: HeldImage | null;
  transfer: Transfer | null;
  /** Bytes this transfer sent (the record counts those of earlier ones). */
  sent: number;
  ended: boolean;
}

/**
 * The transfers this node runs, at most `limit` at once: each one device's, on the connection that
 * this node holds (docs/device-protocol.md, "Firmware updates"). A transfer ends when the device
 * says `done` or refuses, when its connection closes (its progress is kept for the resume), or
 * when it stalls; `freed` is told each time a slot frees.
 */
export function createNodeTransfers(deps: {
  links: FirmwareLinks; cache: ImageCache; records: UpdateRecords; clock: Clock; secrets: Pick<Secrets, 'token'>; log: () => Log;
  limit: number; sent(bytes: number): void; freed(): void;
  /** The device refused an offer because it does not take updates now. */
  disabled(deviceId: string, newest: UpdateRecord, target: FirmwareTarget): void;
}) {
  const active = new Map<string, Active>();

  const progress = (a: Active, offset: number) => ({ bytesSent: (a.record?.bytesSent ?? 0) + a.sent, offset });

  /** Ends a transfer: its slot and its hold on the image go. */
  function end(a: Active): void {
    if (a.ended) return;
    a.ended = true;
    a.transfer?.stop();
    a.image?.release();
    if (active.get(a.deviceId) === a) active.delete(a.deviceId);
    deps.freed();
  }

  const settle = (what: string, a: Active, p: Promise<unknown>) => {
    p.catch((err) => deps.log().warn({ err, device: a.deviceId }, `firmware update: ${what} not stored`));
  };

  /** The connection closed: a transfer under way keeps what it sent and the device acknowledged. */
  function closed(a: Active): void {
    if (a.ended) return;
    end(a);
    if (a.record && a.transfer) settle('an interrupted transfer', a, deps.records.interrupted(a.record, progress(a, a.transfer.acked)));
  }

  async function begin(a: Active, newest: UpdateRecord | null): Promise<void> {
    const image = await deps.cache.acquire(a.target.productId, a.target.version);
    a.image = image;
    if (a.ended) return image.release();
    if (image.sha256 !== a.target.sha256.toLowerCase() || image.bytes.length !== a.target.size) {
      // The store's image is not the release's: sending it would fail every device's check.
      deps.cache.forget(a.target.productId, a.target.version);
      deps.log().error({ product: a.target.productId, version: a.target.version, device: a.deviceId }, 'firmware image does not match its release (SHA-256 or size); not sent');
      return end(a);
    }
    if (!a.link.subscribed) {
      // Not subscribed to the firmware topics: this device cannot take updates over MQTT.
      end(a);
      return deps.records.refused(a.deviceId, newest, a.target, FAILURES.notSubscribed);
    }
    const record = await deps.records.downloading(a.deviceId, newest, a.target);
    a.record = record;
    if (a.ended) return;
    const transfer = new Transfer(deps.secrets.token(6, 'base64url'), image.bytes, a.link, deps.clock.nowMs(), (n) => { a.sent += n; deps.sent(n); });
    a.transfer = transfer;
    a.link.begin({
      id: transfer.id, version: a.target.version, size: a.target.size, sha256: a.target.sha256, chunk_size: transfer.chunkSize,
      window: transfer.window, signature: a.target.signature?.toString('base64') ?? null, forced: a.forced,
    });
  }

  function onMessage(deviceId: string, message: OtaMessage): Refusal | null {
    const a = active.get(deviceId);
    const transfer = a?.transfer;
    if (!a || !transfer || transfer.id !== message.id) {
      return { error: 'unknown_transfer', message: `No firmware transfer ${message.id} is under way for this device` };
    }
    const now = deps.clock.nowMs();
    const record = a.record as UpdateRecord;
    switch (message.kind) {
      case 'ready': {
        const refused = transfer.onReady(message.offset, message.chunkSize, now);
        return refused ? { error: 'bad_payload', message: refused } : null;
      }
      case 'ack': {
        const refused = transfer.onAck(message.offset, now);
        return refused ? { error: 'bad_payload', message: refused } : null;
      }
      case 'done':
        end(a);
        settle('an applied update', a, deps.records.applying(record, progress(a, transfer.size)));
        return null;
      case 'refused':
        end(a);
        // A device that does not take updates now waits for them; other refusals fail the update.
        if (message.on === 'ready' && message.error === UPDATES_DISABLED) deps.disabled(deviceId, record, a.target);
        else settle('a failure', a, deps.records.failed(record, message.error, progress(a, transfer.acked)));
        return null;
    }
  }

  return {
    /**
     * Starts (or resumes) a transfer of `target` to a device held here: 'busy' when every slot is
     * taken, 'offline' when the device is not connected here.
     */
    start(deviceId: string, newest: UpdateRecord | null, target: FirmwareTarget, forced: boolean): 'started' | 'busy' | 'offline' {
      if (active.has(deviceId)) return 'started';
      if (active.size >= deps.limit) return 'busy';
      const link = deps.links.link(deviceId);
      if (!link) return 'offline';
      const a: Active = { deviceId, target, forced, link, record: null, image: null, transfer: null, sent: 0, ended: false };
      active.set(deviceId, a);
      link.onClose(() => closed(a));
      begin(a, newest).catch((err) => {
        deps.log().warn({ err, device: deviceId, version: target.version }, 'firmware transfer could not start');
        end(a);
      });
      return 'started';
    },

    onMessage,

    /** Whether a transfer to the device runs here now. */
    has: (deviceId: string): boolean => active.has(deviceId),
    /** Slots free now. */
    free: (): number => deps.limit - active.size,
    get size(): number {
      return active.size;
    },

    /** Fails the transfers whose device has said nothing about them for STALL_MS. */
    sweep(nowMs: number): void {
      for (const a of [...active.values()]) {
        const t = a.transfer;
        if (!t || !a.record || nowMs - t.lastHeardMs <= STALL_MS) continue;
        end(a);
        settle('a stalled transfer', a, deps.records.failed(a.record, FAILURES.stalled, progress(a, t.acked)));
      }
    },
  };
}

export type NodeTransfers = ReturnType<typeof createNodeTransfers>;
