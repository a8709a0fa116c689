import type { Session } from '../../../lib/session.js';
import { Mfa } from './Mfa.js';
import { AccessTokens } from './AccessTokens.js';
import { SecurityLog } from './SecurityLog.js';

/** The user's account: two-step verification, the live access tokens, and the security log. */
export function Account({ session }: { session: Session }) {
  return (
    <section aria-labelledby="account-title">
      <h2 id="account-title">Account</h2>
      <p className="who">{session.username}</p>
      <Mfa session={session} />
      <AccessTokens session={session} />
      <SecurityLog session={session} />
    </section>
  );
}
