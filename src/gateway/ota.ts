import { cloudTopic } from '../domain/device-protocol.js';
import { CHUNK_HEADER_BYTES, TRANSFER_ID_LENGTH, type OtaBegin } from '../domain/ota-protocol.js';
import type { Session } from './session.js';
import { publishToDevice } from './outgoing.js';
import { subscriptionFor } from './subscriptions.js';

/** Fixed header byte, the most a remaining length takes (4), the topic's length field. */
const PUBLISH_OVERHEAD = 1 + 4 + 2;

/** Ends the cork of a chunk's writes (a static function: no closure per chunk). */
function uncork(s: Session): void {
  s.corked = false;
  s.stream.uncork();
}

/**
 * A firmware transfer's way to one device connection (docs/device-protocol.md, "Firmware
 * updates"): the offer as JSON, then the chunks as binary QoS 0 PUBLISHes written straight to the
 * socket: the packet's header and the chunk's, then the image's bytes as they are (a view into
 * the image the node holds once, never copied per device). A write that fills the socket's buffer
 * says so, and the transfer waits for it to drain: a slow device slows its own transfer only.
 */
export class SessionOtaLink {
  private readonly chunkTopic: Buffer;

  constructor(private readonly s: Session, private readonly deviceId: string) {
    this.chunkTopic = Buffer.from(cloudTopic(deviceId, 'ota/chunk'));
  }

  get open(): boolean {
    return this.s.state === 'connected' && !this.s.stream.destroyed;
  }

  /** The largest chunk whose PUBLISH fits the packet limit the device gave at CONNECT. */
  get chunkLimit(): number {
    const max = this.s.maxPacketToDevice;
    if (max === 0) return Infinity;
    return max - PUBLISH_OVERHEAD - this.chunkTopic.length - (this.s.version === 5 ? 1 : 0) - CHUNK_HEADER_BYTES;
  }

  get subscribed(): boolean {
    return subscriptionFor(this.s, cloudTopic(this.deviceId, 'ota/begin')) !== undefined && subscriptionFor(this.s, this.chunkTopic.toString()) !== undefined;
  }

  begin(offer: OtaBegin): void {
    if (this.open) publishToDevice(this.s, cloudTopic(this.deviceId, 'ota/begin'), offer);
  }

  chunk(id: string, offset: number, bytes: Buffer): boolean {
    const s = this.s;
    if (!this.open) return false;
    const v5 = s.version === 5;
    const remaining = 2 + this.chunkTopic.length + (v5 ? 1 : 0) + CHUNK_HEADER_BYTES + bytes.length;
    const header = Buffer.allocUnsafe(1 + lengthBytes(remaining) + remaining - bytes.length);
    let at = header.writeUInt8(0x30, 0); // PUBLISH, QoS 0, not dup, not retained
    at = writeLength(header, at, remaining);
    at = header.writeUInt16BE(this.chunkTopic.length, at);
    at += this.chunkTopic.copy(header, at);
    if (v5) at = header.writeUInt8(0, at); // no properties
    at += header.write(id, at, TRANSFER_ID_LENGTH, 'latin1');
    header.writeUInt32BE(offset, at);
    // Corked as send() corks: the chunks and packets of one turn leave in one write.
    if (!s.corked) {
      s.corked = true;
      s.stream.cork();
      setImmediate(uncork, s);
    }
    s.stream.write(header);
    return s.stream.write(bytes);
  }

  writable(): Promise<void> {
    const stream = this.s.stream;
    if (!this.open || !stream.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        resolve();
      };
      stream.on('drain', done);
      stream.on('close', done);
    });
  }

  onClose(listener: () => void): void {
    if (this.s.state === 'closed') return listener();
    (this.s.closeListeners ??= []).push(listener);
  }
}

/** Bytes of MQTT's variable-length encoding of `n` (§2.2.3). */
function lengthBytes(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}

function writeLength(buf: Buffer, at: number, n: number): number {
  let rest = n;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    at = buf.writeUInt8(byte, at);
  } while (rest > 0);
  return at;
}
