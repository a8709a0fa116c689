/** The one source of time; tests pass their own to move time forward without sleeping. */
export interface Clock {
  now(): Date;
  /** The same instant in milliseconds, without making a Date (hot paths: caches, token expiry). */
  nowMs(): number;
}

export const systemClock: Clock = { now: () => new Date(), nowMs: () => Date.now() };

/** A clock tests can set and advance. */
export function manualClock(start = new Date('2026-01-01T00:00:00Z')): Clock & { advance(ms: number): void; set(d: Date): void } {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    nowMs: () => current,
    advance(ms: number) { current += ms; },
    set(d: Date) { current = d.getTime(); },
  };
}
