import { DEFAULT_CHUNK_BYTES, DEFAULT_WINDOW, MIN_CHUNK_BYTES, type OtaBegin } from '../../../domain/ota-protocol.js';

/**
 * One device's connection as a transfer sees it, given by the gateway that holds it: it writes
 * straight to the device's socket, so a transfer runs on the node holding the device.
 */
export interface OtaLink {
  /** Whether the connection it was made for is still open. */
  readonly open: boolean;
  /** The largest chunk that fits the device's packet limit (MQTT 5 CONNECT), or Infinity. */
  readonly chunkLimit: number;
  /** Whether the device is subscribed to the firmware topics (the offer and the chunks). */
  readonly subscribed: boolean;
  /** Publishes the offer. */
  begin(offer: OtaBegin): void;
  /** Writes one chunk (a view of the image); false when the socket's buffer is full: wait for writable(). */
  chunk(id: string, offset: number, bytes: Buffer): boolean;
  /** Resolves once the socket has drained, or the connection closed. */
  writable(): Promise<void>;
  /** Told once, when the connection closes. */
  onClose(listener: () => void): void;
}

/**
 * The sending side of one transfer of an image to a device (docs/device-protocol.md, "Firmware
 * updates"): after the device's `ready` says how much it holds, chunks go out while fewer than
 * `window` chunks' bytes wait for the device's cumulative acknowledgement, and while the socket
 * takes them (back-pressure: a full socket buffer pauses the sending until it drains). A `ready`
 * again (the device found a gap) starts over from the offset it names.
 */
export class Transfer {
  /** The chunk size offered; the device may lower it in `ready`. */
  chunkSize: number;
  readonly window = DEFAULT_WINDOW;
  /** Image bytes the device acknowledged holding. */
  acked = 0;
  /** The next offset to send. */
  private next = 0;
  private ready = false;
  private pumping = false;
  /** When the device last said something about this transfer (the stall check), by the clock. */
  lastHeardMs: number;

  constructor(readonly id: string, private readonly image: Buffer, private readonly link: OtaLink, nowMs: number, private readonly sent: (bytes: number) => void) {
    this.chunkSize = Math.max(MIN_CHUNK_BYTES, Math.min(DEFAULT_CHUNK_BYTES, link.chunkLimit));
    this.lastHeardMs = nowMs;
  }

  get size(): number {
    return this.image.length;
  }

  /** `ready {offset, chunk_size}`: sends from `offset` on; answers an error to tell the device, or null. */
  onReady(offset: number, chunkSize: number | undefined, nowMs: number): string | null {
    if (offset > this.size) return `offset ${offset} is beyond the image's ${this.size} bytes`;
    this.lastHeardMs = nowMs;
    // A device may ask for smaller chunks, never larger than offered.
    if (chunkSize !== undefined) this.chunkSize = Math.min(chunkSize, this.chunkSize);
    this.ready = true;
    this.acked = this.next = offset;
    void this.pump();
    return null;
  }

  /** `ack {offset}`: the device holds the image up to `offset`; more may go. */
  onAck(offset: number, nowMs: number): string | null {
    if (!this.ready || offset > this.next) return `offset ${offset} is beyond what was sent (${this.ready ? this.next : 'nothing yet'})`;
    this.lastHeardMs = nowMs;
    if (offset > this.acked) this.acked = offset;
    void this.pump();
    return null;
  }

  /** Stops sending (the device said `done`, refused, or the update ended otherwise). */
  stop(): void {
    this.ready = false;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      const inFlight = this.window * this.chunkSize;
      while (this.ready && this.link.open && this.next < this.size && this.next - this.acked < inFlight) {
        const offset = this.next;
        const end = Math.min(this.size, offset + this.chunkSize);
        this.next = end;
        const more = this.link.chunk(this.id, offset, this.image.subarray(offset, end));
        this.sent(end - offset);
        if (!more) await this.link.writable();
      }
    } finally {
      this.pumping = false;
    }
  }
}
