import type { Session } from '../session.js';
import { Mfa } from '../account/Mfa.js';
import { AccessTokens } from '../account/AccessTokens.js';
import { SecurityLog } from '../account/SecurityLog.js';

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
