import type { Duplex } from 'node:stream';
import type { Packet } from 'mqtt-packet';
import type { GatewayContext, SessionDevice } from './context.js';
import type { PendingCalls } from './calls.js';
import type { Subscription } from './subscriptions.js';
import { dispatch } from './handlers/index.js';
import { publishWill } from './handlers/publish.js';
import { send } from './outgoing.js';
import { packetParser } from './packet-parser.js';
import { wakeWaiters, type Waiter } from './waiters.js';

export type SessionState = 'connecting' | 'authenticating' | 'connected' | 'closed';

/** Ends a stream that `destroy` let finish its last write (a static function: no closure). */
function cut(stream: Duplex): void {
  stream.destroy();
}

/**
 * One device's MQTT connection (docs/device-protocol.md): the state the packet handlers
 * (handlers/) read and change, and how the connection ends. The gateway (gateway.ts) keeps the
 * table of sessions.
 *
 * A process holds tens of thousands of these, most of them idle, so what only some connections
 * need (packets held during authentication, subscriptions and their remembered matches, pending
 * requests, hello waiters) is made on first use and is null until then.
 */
export class Session {
  state: SessionState = 'connecting';
  device: SessionDevice | null = null;
  version: 4 | 5 = 4;
  keepaliveSeconds = 0;
  readonly openedAt: number;
  /** When bytes last arrived (keep-alive, in the gateway's clock). */
  lastSeen: number;
  connectedAt = 0;
  lastHeardWrite = 0;
  /** Set when a newer connection of the same device took over. */
  replaced = false;
  will: { topic: string; payload: Buffer } | null = null;
  /** Packets that arrived after CONNECT, before CONNACK (handlers/index.ts). */
  queued: Packet[] | null = null;
  subscriptions: Subscription[] | null = null;
  /** Whether a subscription may match an event sent to the device (subscriptions.ts, mayMatchEvents). */
  hearsEvents = false;
  /** The best subscription per topic, until the subscriptions change (subscriptions.ts). */
  matched: Map<string, Subscription | undefined> | null = null;
  /** Requests waiting for the device's answer (calls.ts). */
  calls: PendingCalls | null = null;
  /** Requests waiting for this new connection's `hello` or SUBSCRIBE (waiters.ts). */
  waiters: Set<Waiter> | null = null;
  /** Told when the connection closes (a firmware transfer on it, ota.ts). */
  closeListeners: Array<() => void> | null = null;
  /** Whether the device has said `hello` on this connection (its first one follows a restart). */
  helloed = false;
  /** The largest packet the device takes (MQTT 5 CONNECT), or 0 when it did not say. */
  maxPacketToDevice = 0;
  /**
   * Acknowledgements held back until an event's webhook deliveries are stored; later ones wait
   * behind them, as PUBACKs go out in the order of their PUBLISHes ([MQTT-4.6.0-2]).
   */
  acks: Promise<void> | null = null;
  acksWaiting = 0;
  nextMessageId = 1;
  /** Whether writes are corked until setImmediate (outgoing.ts). */
  corked = false;
  readonly parser = packetParser();

  constructor(readonly ctx: GatewayContext, readonly stream: Duplex, readonly ip: string) {
    this.openedAt = this.lastSeen = ctx.clock.nowMs();
    this.parser.on('packet', (packet: Packet) => dispatch(this, packet));
    this.parser.on('error', (err: Error) => this.protocolError(err.message));
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('error', () => this.close('socket error'));
    stream.on('close', () => this.close('socket closed'));
  }

  get deviceId(): string | null {
    return this.device?.id ?? null;
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.lastSeen = this.ctx.clock.nowMs();
    this.parser.parse(chunk);
    // The parser buffers a packet until it is whole; refuse to buffer one larger than the limit.
    this.fits((this.parser as unknown as { packet: { length: number } }).packet.length);
  }

  /** Whether a packet of `length` bytes is within the limit; closes the connection when not. */
  fits(length: number | undefined): boolean {
    if (length === undefined || length <= this.ctx.maxPacketBytes || this.state === 'closed') return true;
    this.ctx.log.warn({ device: this.deviceId, ip: this.ip, length }, 'packet too large; closing');
    if (this.state === 'connected' && this.version === 5) send(this, { cmd: 'disconnect', reasonCode: 0x95 });
    this.destroy();
    return false;
  }

  protocolError(message: string): void {
    this.ctx.log.info({ device: this.deviceId, ip: this.ip }, `MQTT protocol error: ${message}`);
    if (this.state === 'connected' && this.version === 5) send(this, { cmd: 'disconnect', reasonCode: 0x81 });
    this.destroy();
  }

  /** A newer connection of the same device takes over (MQTT 3.1.1 §3.1.4; MQTT 5 reason 0x8E). */
  replace(): void {
    this.replaced = true;
    this.will = null;
    if (this.version === 5) send(this, { cmd: 'disconnect', reasonCode: 0x8e });
    this.destroy();
  }

  /** The cloud is shutting down (MQTT 5 reason 0x8B). */
  shutdown(): void {
    this.will = null;
    if (this.state === 'connected' && this.version === 5) send(this, { cmd: 'disconnect', reasonCode: 0x8b });
    this.destroy();
  }

  /** Lost without DISCONNECT: keep-alive expired or never connected in time. */
  expire(): void {
    this.destroy();
  }

  destroy(): void {
    if (this.stream.destroyed) return this.close('destroyed');
    this.stream.end();
    // Give the last packet (CONNACK refusal, DISCONNECT) a moment to leave, then cut.
    setTimeout(cut, 50, this.stream).unref();
    this.close('closing');
  }

  private close(reason: string): void {
    if (this.state === 'closed') return;
    const wasConnected = this.state === 'connected';
    this.state = 'closed';
    wakeWaiters(this);
    this.calls?.abandon();
    const listeners = this.closeListeners;
    this.closeListeners = null;
    if (listeners) for (const listener of listeners) listener();
    if (wasConnected) publishWill(this);
    this.ctx.detached(this, reason);
  }
}
