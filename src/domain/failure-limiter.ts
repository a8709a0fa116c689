import { DomainError } from './errors.js';
import type { Clock } from '../platform/clock.js';

/**
 * Limits failed logins and client authentications (Particle locks an account for 30 minutes
 * after 10 failures in a row: docs/particle-compatibility.md#failed-attempts-and-rate-limits).
 * Two rules:
 * - per key (an account or a client): after `maxConsecutive` failures in a row, the key is
 *   locked for `lockoutSeconds`, even for the right password; a success resets the count;
 * - per source address: at most `maxPerWindow` failures within `windowSeconds`.
 *
 * State is in memory, per node. A restart forgets lock-outs, which errs towards availability.
 */
export interface FailureLimiterOptions {
  maxConsecutive: number;
  lockoutSeconds: number;
  maxPerWindow: number;
  windowSeconds: number;
}

interface KeyState { failures: number; lockedUntil: number }
interface WindowState { start: number; count: number }

/** Keeps the maps bounded under a flood of distinct keys (a spray of usernames or addresses). */
const MAX_TRACKED = 100_000;

export class FailureLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly sources = new Map<string, WindowState>();

  constructor(private readonly clock: Clock, private readonly options: FailureLimiterOptions) {}

  /** Throws rate_limit_exceeded when the key is locked out or the source is over its budget. */
  check(key: string, source: string): void {
    const now = this.clock.nowMs();
    const state = this.keys.get(key);
    if (state && state.lockedUntil > now) {
      throw tooMany('Too many failed attempts; this account is locked for a while', Math.ceil((state.lockedUntil - now) / 1000));
    }
    const win = this.sources.get(source);
    if (win && now - win.start < this.options.windowSeconds * 1000 && win.count >= this.options.maxPerWindow) {
      throw tooMany('Too many failed attempts from this address', Math.ceil((win.start + this.options.windowSeconds * 1000 - now) / 1000));
    }
  }

  fail(key: string, source: string): void {
    const now = this.clock.nowMs();
    const state = this.keys.get(key) ?? { failures: 0, lockedUntil: 0 };
    if (state.lockedUntil !== 0 && state.lockedUntil <= now) { state.failures = 0; state.lockedUntil = 0; }
    state.failures += 1;
    if (state.failures >= this.options.maxConsecutive) state.lockedUntil = now + this.options.lockoutSeconds * 1000;
    setBounded(this.keys, key, state);

    const win = this.sources.get(source);
    if (!win || now - win.start >= this.options.windowSeconds * 1000) setBounded(this.sources, source, { start: now, count: 1 });
    else win.count += 1;
  }

  succeed(key: string): void {
    this.keys.delete(key);
  }
}

function setBounded<V>(map: Map<string, V>, key: string, value: V): void {
  if (!map.has(key) && map.size >= MAX_TRACKED) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}

function tooMany(message: string, retryAfterSeconds: number): DomainError {
  return new DomainError('rate_limit_exceeded', message, { retryAfterSeconds: Math.max(1, retryAfterSeconds) });
}
