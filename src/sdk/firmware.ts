import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { parseBegin, parseChunk, UPDATES_DISABLED, type OtaBegin } from '../domain/ota-protocol.js';

/** An update the cloud offers (docs/sdk.md, "Firmware updates"). */
export interface FirmwareOffer {
  version: number;
  size: number;
  /** Of the whole image, hex. */
  sha256: string;
  /** Whether the release carries a signature. */
  signed: boolean;
  /** The product forces updates: taken even while updates are disabled. */
  forced: boolean;
}

/** The whole image, its SHA-256 checked (and its signature, given the product's key): the application decides when to apply it. */
export interface FirmwareUpdate extends FirmwareOffer {
  readonly image: Buffer;
  /**
   * Applies it: the device restarts (disconnects, connects again) and says `hello` running
   * `firmwareVersion` (by default the offered version). Resolves once it is back online.
   */
  apply(firmwareVersion?: number): Promise<void>;
}

/**
 * The product's Ed25519 public key: a KeyObject, PEM text, base64 of its raw 32 bytes (as the
 * product's signing key answers `public_key_base64`), the raw 32 bytes, or DER (SPKI).
 */
export type FirmwareKey = KeyObject | string | Buffer;

export function firmwareKeyOf(key: FirmwareKey): KeyObject {
  if (typeof key === 'string') return key.trim().startsWith('-----BEGIN') ? createPublicKey(key) : firmwareKeyOf(Buffer.from(key.trim(), 'base64'));
  if (Buffer.isBuffer(key)) {
    return key.length === 32
      ? createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.toString('base64url') }, format: 'jwk' })
      : createPublicKey({ key, format: 'der', type: 'spki' });
  }
  return key;
}

/** What the receiver needs of its device. */
export interface ReceiverHooks {
  /** Publishes on `devices/<id>/ota/<leaf>` (QoS 1 for ready and done, 0 for acks). */
  send(leaf: 'ready' | 'ack' | 'done', body: Record<string, unknown>): void;
  /** Whether the device takes updates now (disableUpdates). */
  enabled(): boolean;
  key: KeyObject | null;
  /** A smaller chunk size to ask for, if any. */
  chunkSize?: number | undefined;
  offer?: ((offer: FirmwareOffer) => boolean | Promise<boolean>) | undefined;
  check?: ((image: Buffer, offer: FirmwareOffer) => string | null | undefined | Promise<string | null | undefined>) | undefined;
  /** The image passed every check and `done` was said: the application takes it from here. */
  received(image: Buffer, offer: FirmwareOffer): void;
  failed(offer: FirmwareOffer, error: string): void;
  /** Bytes of the image held now (at each acknowledgement). */
  progress(offer: FirmwareOffer, received: number): void;
}

/** The bytes received of one image (by its SHA-256): kept across reconnects, so a transfer resumes. */
interface Partial { sha256: string; bytes: Buffer; received: number }
/** The transfer under way: its id, the offer, and when the device last acknowledged. */
interface Current { begin: OtaBegin; offer: FirmwareOffer; chunkSize: number; acked: number; resyncing: boolean }

const offerOf = (b: OtaBegin): FirmwareOffer => ({ version: b.version, size: b.size, sha256: b.sha256, signed: b.signature !== null, forced: b.forced });

/**
 * The device's side of a firmware transfer (docs/device-protocol.md, "Firmware updates"): answers
 * an offer with how much of the same image it holds already, takes the chunks in order (a gap
 * makes it say `ready` again from what it holds), acknowledges every half window, and checks the
 * whole image before it says `done`: the SHA-256, the signature when it was given the product's
 * key, then the application's own check. Only then is the image handed over; nothing of a
 * refused image is applied.
 */
export class FirmwareReceiver {
  private partial: Partial | null = null;
  private current: Current | null = null;

  constructor(private readonly hooks: ReceiverHooks) {}

  /** `cloud/ota/begin`. */
  async onBegin(body: Record<string, unknown>): Promise<void> {
    const begin = parseBegin(body);
    if (!begin) return;
    const offer = offerOf(begin);
    const refuse = (error: string) => {
      this.hooks.send('ready', { id: begin.id, error });
      this.hooks.failed(offer, error);
    };
    this.current = null;
    if (!this.hooks.enabled() && !begin.forced) return this.hooks.send('ready', { id: begin.id, error: UPDATES_DISABLED });
    if (this.hooks.key && begin.signature === null) return refuse('unsigned');
    if (this.hooks.offer && !(await this.hooks.offer(offer))) return refuse('refused');
    if (this.partial?.sha256 !== begin.sha256 || this.partial.bytes.length !== begin.size) {
      this.partial = { sha256: begin.sha256, bytes: Buffer.alloc(begin.size), received: 0 };
    }
    const chunkSize = Math.min(begin.chunk_size, this.hooks.chunkSize ?? begin.chunk_size);
    this.current = { begin, offer, chunkSize, acked: this.partial.received, resyncing: false };
    this.hooks.send('ready', { id: begin.id, offset: this.partial.received, ...(chunkSize < begin.chunk_size ? { chunk_size: chunkSize } : {}) });
    if (this.partial.received === begin.size) await this.finish();
  }

  /** `cloud/ota/chunk`: binary. */
  async onChunk(payload: Buffer): Promise<void> {
    const chunk = parseChunk(payload);
    const cur = this.current;
    const partial = this.partial;
    if (!chunk || !cur || !partial || chunk.id !== cur.begin.id) return;
    if (chunk.offset !== partial.received) {
      // Chunks before what it holds are repeats; one after is a gap: start over from what it holds, once.
      if (chunk.offset > partial.received && !cur.resyncing) {
        cur.resyncing = true;
        this.hooks.send('ready', { id: cur.begin.id, offset: partial.received });
      }
      return;
    }
    if (chunk.offset + chunk.data.length > partial.bytes.length) return;
    cur.resyncing = false;
    chunk.data.copy(partial.bytes, chunk.offset);
    partial.received += chunk.data.length;
    const whole = partial.received === partial.bytes.length;
    if (whole || partial.received - cur.acked >= Math.max(1, Math.floor(cur.begin.window / 2)) * cur.chunkSize) {
      cur.acked = partial.received;
      this.hooks.send('ack', { id: cur.begin.id, offset: partial.received });
      this.hooks.progress(cur.offer, partial.received);
    }
    if (whole) await this.finish();
  }

  private async finish(): Promise<void> {
    const cur = this.current;
    const partial = this.partial;
    if (!cur || !partial) return;
    this.current = null;
    // Whatever the outcome, these bytes are done with: a refused image is not resumed.
    this.partial = null;
    const error = await this.verify(partial.bytes, cur.begin, cur.offer);
    if (error) {
      this.hooks.send('done', { id: cur.begin.id, error });
      this.hooks.failed(cur.offer, error);
      return;
    }
    this.hooks.send('done', { id: cur.begin.id });
    this.hooks.received(partial.bytes, cur.offer);
  }

  private async verify(image: Buffer, begin: OtaBegin, offer: FirmwareOffer): Promise<string | null> {
    if (createHash('sha256').update(image).digest('hex') !== begin.sha256) return 'sha256_mismatch';
    if (this.hooks.key && !verify(null, image, this.hooks.key, Buffer.from(begin.signature ?? '', 'base64'))) return 'bad_signature';
    try {
      return (await this.hooks.check?.(image, offer)) || null;
    } catch {
      return 'check_failed';
    }
  }
}
