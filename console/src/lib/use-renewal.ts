import { useEffect } from 'react';
import { ApiError } from './api-error.js';
import { renew, renewalDelay, type Session } from './session.js';

/**
 * Keeps the console's session alive while the console is open: the token is renewed before it
 * expires. A renewal the cloud refuses (the session was revoked, or it lapsed while the computer
 * slept too long) ends the session; one that did not reach the cloud is tried again until then.
 */
export function useRenewal(session: Session | null, onRenewed: (s: Session) => void, onEnded: () => void): void {
  useEffect(() => {
    if (!session) return;
    const delay = renewalDelay(session);
    if (delay === null) return;
    let live = true;
    let timer = window.setTimeout(function attempt() {
      renew(session).then((next) => { if (live) onRenewed(next); }, (err: unknown) => {
        if (!live) return;
        if (err instanceof ApiError && err.status >= 400 && err.status < 500) onEnded();
        else timer = window.setTimeout(attempt, 10_000);
      });
    }, delay);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
    // Only a new session reschedules; the callbacks set the App's state, whichever render made them.
  }, [session]);
}
