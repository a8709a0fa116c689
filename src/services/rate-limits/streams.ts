import type { Bus } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import { notifyInChunks } from './notices.js';

/** One node's open streams per address: those that changed, or all of them (a refresh). */
interface GaugesNotice { node: string; gauges: Record<string, number> }

export const STREAMS_TOPIC = 'limits.streams';
const ADDRESSES_PER_NOTICE = 1000;

export interface SharedGauges {
  bus: Bus;
  /** How often a node sends all its gauges again. */
  refreshMs: number;
  /** How long another node's gauge counts without being sent again (a node that died stops counting then). */
  lifetimeMs: number;
}

/**
 * Event streams open now per client address, summed over the nodes of a cluster
 * (docs/architecture.md, "Request limits in a cluster"). Each node knows its own streams; it
 * sends the gauges that changed during one turn of the event loop, and all of them every
 * `refreshMs`, as notices on the bus. Another node's gauge counts for `lifetimeMs` after it was
 * last sent: a node that dies without a word stops counting then, one that closes in order sets
 * its gauges to zero as it goes. On one node (no `shared`) nothing is sent.
 */
export class OpenStreams {
  private readonly mine = new Map<string, number>();
  /** Other nodes' gauges: by address, by node. */
  private readonly others = new Map<string, Map<string, { count: number; until: number }>>();
  private readonly changed = new Set<string>();
  private scheduled = false;
  private readonly stops: Array<() => void> = [];

  constructor(private readonly clock: Clock, private readonly shared?: SharedGauges) {
    if (!shared) return;
    this.stops.push(shared.bus.listen(STREAMS_TOPIC, (payload) => this.received(payload)));
    // Back from an outage, the others may have let this node's gauges lapse.
    this.stops.push(shared.bus.whenBack(() => this.send(this.mine)));
    const refresh = setInterval(() => {
      this.sweep();
      this.send(this.mine);
    }, shared.refreshMs);
    refresh.unref();
    this.stops.push(() => clearInterval(refresh));
  }

  /**
   * Takes one open stream for the address while the cluster's total is below `max`: answers its
   * release (to call when the stream ends; once is enough), or null when the address is at `max`.
   */
  take(address: string, max: number): (() => void) | null {
    if (this.total(address) >= max) return null;
    this.mine.set(address, (this.mine.get(address) ?? 0) + 1);
    this.touched(address);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.mine.get(address) ?? 1) - 1;
      if (left > 0) this.mine.set(address, left);
      else this.mine.delete(address);
      this.touched(address);
    };
  }

  /** The address's open streams on every node, as known here. */
  total(address: string): number {
    let n = this.mine.get(address) ?? 0;
    const elsewhere = this.others.get(address);
    if (elsewhere === undefined) return n;
    const now = this.clock.nowMs();
    for (const [node, gauge] of elsewhere) {
      if (gauge.until > now) n += gauge.count;
      else elsewhere.delete(node);
    }
    if (elsewhere.size === 0) this.others.delete(address);
    return n;
  }

  /** Says goodbye: the other nodes stop counting this node's streams at once. */
  close(): void {
    for (const stop of this.stops.splice(0)) stop();
    if (this.shared && this.mine.size > 0) this.send(new Map([...this.mine.keys()].map((a) => [a, 0])));
  }

  private touched(address: string): void {
    if (!this.shared) return;
    this.changed.add(address);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const changed = new Map([...this.changed].map((a) => [a, this.mine.get(a) ?? 0]));
      this.changed.clear();
      this.send(changed);
    });
  }

  private send(gauges: ReadonlyMap<string, number>): void {
    const bus = this.shared?.bus;
    if (!bus || bus.state() !== 'up') return;
    // An empty refresh says nothing: the others' entries of this node lapse by themselves.
    notifyInChunks(bus, STREAMS_TOPIC, gauges, ADDRESSES_PER_NOTICE, (chunk) => ({ node: bus.nodeId, gauges: chunk } satisfies GaugesNotice));
  }

  private received(payload: unknown): void {
    const shared = this.shared as SharedGauges;
    const notice = payload as Partial<GaugesNotice> | null;
    if (notice === null || typeof notice !== 'object' || typeof notice.node !== 'string' || notice.node === shared.bus.nodeId) return;
    if (notice.gauges === null || typeof notice.gauges !== 'object') return;
    const until = this.clock.nowMs() + shared.lifetimeMs;
    for (const [address, count] of Object.entries(notice.gauges)) {
      if (typeof count !== 'number') continue;
      let nodes = this.others.get(address);
      if (count > 0) {
        if (nodes === undefined) this.others.set(address, (nodes = new Map()));
        nodes.set(notice.node, { count, until });
      } else if (nodes !== undefined) {
        nodes.delete(notice.node);
        if (nodes.size === 0) this.others.delete(address);
      }
    }
  }

  /** Drops the gauges of other nodes that lapsed. */
  private sweep(): void {
    const now = this.clock.nowMs();
    for (const [address, nodes] of this.others) {
      for (const [node, gauge] of nodes) if (gauge.until <= now) nodes.delete(node);
      if (nodes.size === 0) this.others.delete(address);
    }
  }
}
