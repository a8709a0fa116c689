import type { Bus } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import { WindowCounts, type Tally } from './windows.js';
import { notifyInChunks } from './notices.js';

/** One node's new counts in one window, sent to the others. */
interface CountsNotice { node: string; windowMs: number; index: number; counts: Record<string, number> }

export const REQUESTS_TOPIC = 'limits.requests';
/** Keys per notice: a spray of addresses in one turn is sent as several notices of bounded size. */
const KEYS_PER_NOTICE = 1000;

/**
 * Requests counted per key (a limit and an address) in fixed windows (windows.ts), summed over
 * the nodes of a cluster (docs/architecture.md, "Request limits in a cluster"). Each node counts
 * its own requests at once, in memory, and sends what it counted during one turn of the event
 * loop as one notice on the bus; every other node adds it to its counts. So a request costs no
 * round trip, a node knows the cluster's total within the time a notice takes (milliseconds),
 * and what the cluster may let through beyond a limit is what arrives at the other nodes in that
 * time. On one node (`bus` absent) nothing is sent. While the bus is down a node counts alone:
 * its own limit still holds.
 */
export class RequestCounts {
  private readonly windows: WindowCounts;
  /** What this node counted and has not sent yet, by window. */
  private pending = new Map<string, { windowMs: number; index: number; counts: Map<string, number> }>();
  private scheduled = false;
  private readonly unlisten: () => void;

  constructor(clock: Clock, maxKeys: number, private readonly bus?: Bus) {
    this.windows = new WindowCounts(clock, maxKeys);
    this.unlisten = bus ? bus.listen(REQUESTS_TOPIC, (payload) => this.received(payload)) : () => undefined;
  }

  /** Counts one request of the key against a limit of `max` per window; answers the cluster's count as known here. */
  add(key: string, windowMs: number, max: number): Tally {
    const tally = this.windows.add(key, windowMs);
    // Past the limit, more counts tell the other nodes nothing: the request that crossed it was
    // sent, so they know the key is over too. A flood costs the cluster no notices.
    if (this.bus !== undefined && tally.count <= max + 1 && this.bus.state() === 'up') this.share(key, windowMs, tally.window);
    return tally;
  }

  /** The key's count in the current window, without counting. */
  read(key: string, windowMs: number): Tally {
    return this.windows.read(key, windowMs);
  }

  /** True the first time a refusal of the key is reported in the current window on this node. */
  firstReport(key: string, windowMs: number): boolean {
    return this.windows.firstReport(key, windowMs);
  }

  close(): void {
    this.unlisten();
  }

  private share(key: string, windowMs: number, index: number): void {
    const id = `${windowMs}/${index}`;
    let batch = this.pending.get(id);
    if (batch === undefined) {
      batch = { windowMs, index, counts: new Map() };
      this.pending.set(id, batch);
    }
    batch.counts.set(key, (batch.counts.get(key) ?? 0) + 1);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    const bus = this.bus as Bus;
    const batches = this.pending;
    this.pending = new Map();
    for (const { windowMs, index, counts } of batches.values()) {
      notifyInChunks(bus, REQUESTS_TOPIC, counts, KEYS_PER_NOTICE, (chunk) => ({ node: bus.nodeId, windowMs, index, counts: chunk } satisfies CountsNotice));
    }
  }

  private received(payload: unknown): void {
    const notice = payload as Partial<CountsNotice> | null;
    if (notice === null || typeof notice !== 'object' || notice.node === (this.bus as Bus).nodeId) return;
    const { windowMs, index, counts } = notice;
    if (typeof windowMs !== 'number' || windowMs <= 0 || typeof index !== 'number' || counts === null || typeof counts !== 'object') return;
    for (const [key, n] of Object.entries(counts)) {
      if (typeof n === 'number' && n > 0) this.windows.addWindow(key, windowMs, index, n);
    }
  }
}
