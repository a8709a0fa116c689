import { DomainError } from './errors.js';
import type { Clock } from '../platform/clock.js';
import { sha256 } from '../platform/secrets.js';
import type { SharedTable } from '../bus/shared.js';

/**
 * Limits failed logins and client authentications (Particle locks an account for 30 minutes
 * after 10 failures in a row: docs/particle-compatibility.md#failed-attempts-and-rate-limits).
 * Two rules:
 * - per key (an account or a client): after `maxConsecutive` failures in a row, the key is
 *   locked for `lockoutSeconds`, even for the right password; a success resets the count;
 * - per source address: at most `maxPerWindow` failures within `windowSeconds`.
 *
 * The counters are in a table every node shares (docs/security.md, "Lock-out in a cluster"), so
 * that tries spread over nodes count as on one: in memory on one node, a NATS key-value bucket in
 * a cluster. Keys are stored as SHA-256 digests (no usernames or addresses in clear), and every
 * count is a compare-and-swap, so that failures on two nodes at once both count.
 */
export interface FailureLimiterOptions {
  maxConsecutive: number;
  lockoutSeconds: number;
  maxPerWindow: number;
  windowSeconds: number;
}

export interface FailureTables {
  /** The table every node shares (opened on first use, and again after a failed open). */
  shared(): Promise<SharedTable>;
  /**
   * This node's own table, counted in instead while the shared one fails (NATS down): the limits
   * hold per node meanwhile, rather than every login and device connect being refused.
   */
  local?(): Promise<SharedTable>;
  /** False when the shared table is known to be unreachable, so that nobody waits for its time-out. */
  reachable?(): boolean;
  /** Told when the counting moves to this node's own table (with why) and back. */
  switched?(toLocal: boolean, err?: unknown): void;
  /**
   * True when the shared table is known, without waiting, to hold nothing under `id`: what its
   * `get` would answer at once (services/failure-limits.ts keeps which ids hold an entry). False
   * when it may hold something, or cannot tell: the table is asked.
   */
  absent?(id: string): boolean;
}

interface KeyState { failures: number; lockedUntil: number }
interface WindowState { start: number; count: number }

/** Compare-and-swap tries of one count before giving up (only a flood of failures on one key loses this many races). */
const MAX_TRIES = 10;

export class FailureLimiter {
  private onLocal = false;

  constructor(private readonly clock: Clock, private readonly options: FailureLimiterOptions, private readonly tables: FailureTables) {}

  /** How long the table must keep an entry after its last write: the lock-out and the window. */
  static ttlMs(options: FailureLimiterOptions): number {
    return Math.max(options.lockoutSeconds, options.windowSeconds) * 1000;
  }

  /** Throws rate_limit_exceeded when the key is locked out or the source is over its budget. */
  async check(key: string, source: string): Promise<void> {
    // Nearly every login, client authentication and device connect: no failure counted on the key
    // or the address, known without the table's round of promises (a sixth of what a device
    // connect allocated: docs/benchmarks.md, "Connected devices").
    if (this.knownAbsent(keyId(key)) && this.knownAbsent(sourceId(source))) return;
    const refusal = await this.run(async (table) => {
      const now = this.clock.nowMs();
      const [state, win] = await Promise.all([read<KeyState>(table, keyId(key)), read<WindowState>(table, sourceId(source))]);
      const lockedUntil = state?.value?.lockedUntil ?? 0;
      if (lockedUntil > now) {
        return tooMany('Too many failed attempts; this account is locked for a while', Math.ceil((lockedUntil - now) / 1000));
      }
      const w = win?.value;
      if (w && now - w.start < this.options.windowSeconds * 1000 && w.count >= this.options.maxPerWindow) {
        return tooMany('Too many failed attempts from this address', Math.ceil((w.start + this.options.windowSeconds * 1000 - now) / 1000));
      }
      return undefined;
    });
    if (refusal) throw refusal;
  }

  /** Counts a failure against the key and the source. */
  async fail(key: string, source: string): Promise<void> {
    const counted = await this.run(async (table) => {
      const now = this.clock.nowMs();
      const windowMs = this.options.windowSeconds * 1000;
      const [a, b] = await Promise.all([
        bump<KeyState>(table, keyId(key), (prev) => {
          const state = prev && !(prev.lockedUntil !== 0 && prev.lockedUntil <= now) ? prev : { failures: 0, lockedUntil: 0 };
          const failures = state.failures + 1;
          return { failures, lockedUntil: failures >= this.options.maxConsecutive ? now + this.options.lockoutSeconds * 1000 : state.lockedUntil };
        }),
        bump<WindowState>(table, sourceId(source), (prev) => (!prev || now - prev.start >= windowMs ? { start: now, count: 1 } : { start: prev.start, count: prev.count + 1 })),
      ]);
      return a && b;
    });
    // Every try lost the race to another writer of the same counter: a flood of failures on this
    // account or address right now, which is refused rather than left uncounted.
    if (!counted) throw tooMany('Too many failed attempts at once; retry shortly', 1);
  }

  /** A success: the key's count of failures in a row starts again. */
  async succeed(key: string): Promise<void> {
    const id = keyId(key);
    if (this.knownAbsent(id)) return;
    await this.run(async (table) => {
      // Most successes follow no failure: a read spares the shared table a write.
      if (await table.get(id)) await table.delete(id);
    });
  }

  /** The shared table is in use and known to hold nothing under `id` (FailureTables.absent). */
  private knownAbsent(id: string): boolean {
    return !this.onLocal && this.tables.reachable?.() !== false && this.tables.absent?.(id) === true;
  }

  /** Runs on the shared table; while it fails, on this node's own (when there is one). */
  private async run<T>(work: (table: SharedTable) => Promise<T>): Promise<T> {
    const { local } = this.tables;
    if (!local) return work(await this.tables.shared());
    if (this.tables.reachable?.() !== false) {
      try {
        const out = await work(await this.tables.shared());
        if (this.onLocal) this.switch(false);
        return out;
      } catch (err) {
        if (!this.onLocal) this.switch(true, err);
      }
    } else if (!this.onLocal) {
      this.switch(true);
    }
    return work(await local());
  }

  private switch(toLocal: boolean, err?: unknown): void {
    this.onLocal = toLocal;
    this.tables.switched?.(toLocal, err);
  }
}

/**
 * The stored names: digests, kept apart by kind (a key and an address never share one). A
 * request names its key and its address two or three times (check, then succeed or fail), and
 * the same few come again and again (a back-end's client, a fleet's gateways): each name is
 * remembered rather than digested anew, which was about half of the limiter's CPU per token
 * (docs/benchmarks.md). The memory is emptied when it reaches NAMES_KEPT, as a flood of new
 * addresses would fill it.
 */
const NAMES_KEPT = 10_000;
const keyNames = new Map<string, string>();
const sourceNames = new Map<string, string>();

function named(names: Map<string, string>, prefix: string, value: string): string {
  let id = names.get(value);
  if (id === undefined) {
    if (names.size >= NAMES_KEPT) names.clear();
    id = `${prefix}-${sha256(value)}`;
    names.set(value, id);
  }
  return id;
}

const keyId = (key: string) => named(keyNames, 'key', key);
const sourceId = (source: string) => named(sourceNames, 'source', source);

async function read<V>(table: SharedTable, id: string): Promise<{ value: V | null; revision: number } | null> {
  const entry = await table.get(id);
  if (!entry) return null;
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(entry.value);
  } catch {
    // Not ours to read (another version's format): counted afresh over it, below.
  }
  return { value: typeof parsed === 'object' && parsed !== null ? parsed as V : null, revision: entry.revision };
}

/** Writes `next(current)` by compare-and-swap; false when every try lost to another writer. */
async function bump<V>(table: SharedTable, id: string, next: (prev: V | null) => V): Promise<boolean> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const entry = await read<V>(table, id);
    if (await table.swap(id, JSON.stringify(next(entry?.value ?? null)), entry?.revision ?? null)) return true;
    // Spread the next tries of writers that collided.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * (attempt + 1)));
  }
  return false;
}

function tooMany(message: string, retryAfterSeconds: number): DomainError {
  return new DomainError('rate_limit_exceeded', message, { retryAfterSeconds: Math.max(1, retryAfterSeconds) });
}
