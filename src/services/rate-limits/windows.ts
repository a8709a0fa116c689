import type { Clock } from '../../platform/clock.js';

/**
 * Counts per key in fixed windows aligned to the clock: window `i` of a length `windowMs` runs
 * from `i × windowMs` to `(i + 1) × windowMs` in milliseconds since 1970, so every node of a
 * cluster (their clocks in sync) is in the same window at the same time and can add another
 * node's counts to its own. A window that ended is dropped whole, and the keys of one window are
 * bounded: past `maxKeys`, the key counted least recently goes (a spray of addresses cannot
 * grow memory, and an address still sending keeps its count).
 */
export interface Tally {
  /** The count of the key in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
  /** The window's index. */
  window: number;
}

class Window {
  readonly counts = new Map<string, { n: number }>();
  /** Keys whose refusal this node has already reported in this window (one log line each). */
  readonly reported = new Set<string>();
  constructor(readonly index: number) {}
}

/** The windows of one length: the current one, and the next when another node is already in it. */
interface Windows { current: Window; next: Window | null }

export class WindowCounts {
  private readonly byLength = new Map<number, Windows>();

  constructor(private readonly clock: Clock, private readonly maxKeys: number) {}

  /** The current window of this length, moved on when the clock has passed its end. */
  private window(windowMs: number, now: number): Window {
    const index = Math.floor(now / windowMs);
    let w = this.byLength.get(windowMs);
    if (w === undefined) {
      w = { current: new Window(index), next: null };
      this.byLength.set(windowMs, w);
    } else if (w.current.index !== index) {
      w.current = w.next?.index === index ? w.next : new Window(index);
      w.next = null;
    }
    return w.current;
  }

  /** Adds `n` to the key in the current window; answers the count, `n` included. */
  add(key: string, windowMs: number, n = 1): Tally {
    const now = this.clock.nowMs();
    const w = this.window(windowMs, now);
    const count = bump(w.counts, key, n, this.maxKeys);
    return { count, resetMs: (w.index + 1) * windowMs - now, window: w.index };
  }

  /** The key's count in the current window, without counting. */
  read(key: string, windowMs: number): Tally {
    const now = this.clock.nowMs();
    const w = this.window(windowMs, now);
    return { count: w.counts.get(key)?.n ?? 0, resetMs: (w.index + 1) * windowMs - now, window: w.index };
  }

  /**
   * Adds what another node counted in window `index`: to the current window, or to the next
   * when that node's clock is a little ahead; a window that ended here counts for nothing.
   */
  addWindow(key: string, windowMs: number, index: number, n: number): void {
    const w = this.window(windowMs, this.clock.nowMs());
    if (index === w.index) {
      bump(w.counts, key, n, this.maxKeys);
    } else if (index === w.index + 1) {
      const windows = this.byLength.get(windowMs) as Windows;
      windows.next ??= new Window(index);
      bump(windows.next.counts, key, n, this.maxKeys);
    }
  }

  /** True the first time it is asked for a key in the current window (a refusal to log once). */
  firstReport(key: string, windowMs: number): boolean {
    const w = this.window(windowMs, this.clock.nowMs());
    if (w.reported.has(key) || w.reported.size >= this.maxKeys) return false;
    w.reported.add(key);
    return true;
  }
}

/**
 * Adds to a key's count. Past `max` keys the least recently counted goes: keys are moved to the
 * end of the map as they count, once it is half full (before that nothing is dropped, and moving
 * a key costs two more hash operations on every request).
 */
function bump(counts: Map<string, { n: number }>, key: string, n: number, max: number): number {
  const entry = counts.get(key);
  if (entry === undefined) {
    if (counts.size >= max) counts.delete(counts.keys().next().value as string);
    counts.set(key, { n });
    return n;
  }
  entry.n += n;
  if (counts.size > max / 2) {
    counts.delete(key);
    counts.set(key, entry);
  }
  return entry.n;
}
