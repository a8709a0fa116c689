import type { Session } from './session.js';

/**
 * A device subscribes and says `hello` right after CONNACK; for this long after CONNACK a call
 * the device would be refused for waits for its next `hello` or SUBSCRIBE instead of failing at
 * once (docs/device-protocol.md, "Function calls").
 */
export const HELLO_GRACE_MS = 5000;

/** Wakes one waiting request: true when the device said more, false when the wait ran out. */
export type Waiter = (saidMore: boolean) => void;

/**
 * While the connection is new (HELLO_GRACE_MS by the gateway's clock), a promise of whether the
 * device said more (its next `hello` or SUBSCRIBE, or the connection ended: true) before the
 * grace or `leftMs` ran out (false); afterwards false at once.
 */
export function untilDeviceSaysMore(s: Session, leftMs: number): Promise<boolean> | false {
  const left = Math.min(leftMs, HELLO_GRACE_MS - (s.ctx.clock.nowMs() - s.connectedAt));
  if (left <= 0) return false;
  const waiters = (s.waiters ??= new Set());
  return new Promise<boolean>((resolve) => {
    const wake: Waiter = (saidMore) => {
      clearTimeout(timer);
      waiters.delete(wake);
      resolve(saidMore);
    };
    const timer = setTimeout(wake, left, false);
    waiters.add(wake);
  });
}

/** The device said `hello` or subscribed, or the connection ended: waiting requests look again. */
export function wakeWaiters(s: Session): void {
  const waiters = s.waiters;
  if (waiters === null) return;
  s.waiters = null;
  for (const wake of waiters) wake(true);
}
