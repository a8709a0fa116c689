export interface BackoffOptions {
  /** First delay ceiling, ms. */
  minMs: number;
  /** Largest delay, ms. */
  maxMs: number;
}

const DEFAULTS: BackoffOptions = { minMs: 1000, maxMs: 60_000 };

/**
 * Exponential backoff with full jitter: a random delay between 0 and min(max, min·2^attempt).
 * Spreading reconnects at random keeps a fleet that lost the cloud at once from returning at
 * once (a reconnect storm).
 */
export function backoffDelay(attempt: number, options: Partial<BackoffOptions> = {}, random: () => number = Math.random): number {
  const { minMs, maxMs } = { ...DEFAULTS, ...options };
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}
