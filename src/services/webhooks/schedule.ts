/**
 * When a failed delivery is tried again (docs/webhooks.md, "Retries"): the first retry within
 * 30 seconds, as Particle's (30 s, 1 min) and Standard Webhooks' example (5 s) do, then waits
 * that grow to hours, as Svix's; each wait is drawn between 80 % and 120 % of its step so that
 * deliveries failed together do not return together. After the last step the delivery has
 * failed for good.
 */
export const RETRY_STEPS_SECONDS: readonly number[] = [10, 60, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600];

/** Attempts in all: the first and one per step. */
export const MAX_ATTEMPTS = RETRY_STEPS_SECONDS.length + 1;

/** A webhook whose deliveries have failed without a success for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3600 * 1000;

/** How long a `Retry-After` (429, 503) may hold a delivery back at most. */
export const MAX_RETRY_AFTER_MS = 6 * 3600 * 1000;

/**
 * The wait (ms) before the next attempt after `attempts` failed ones, or null when the delivery
 * has used them all. `retryAfterMs`, the receiver's own request, wins when it is later.
 */
export function nextDelay(attempts: number, retryAfterMs: number | null = null, random: () => number = Math.random): number | null {
  const step = RETRY_STEPS_SECONDS[attempts - 1];
  if (step === undefined) return null;
  const drawn = Math.round(step * 1000 * (0.8 + 0.4 * random()));
  return retryAfterMs === null ? drawn : Math.max(drawn, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** `Retry-After` in seconds or as an HTTP date (RFC 9110 §10.2.3), as a wait from `nowMs`. */
export function retryAfter(header: string | undefined, nowMs: number): number | null {
  if (header === undefined || header.trim() === '') return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
