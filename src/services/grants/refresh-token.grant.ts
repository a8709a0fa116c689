import { DomainError } from '../../domain/errors.js';
import { accountOf } from '../audit-account.js';
import type { GrantDeps, GrantHandler, Issuer } from './grant.js';

/**
 * RFC 6749 §6: a refresh token, single use, for a new access token of the same lifetime and a
 * new refresh token. It is bound to the client that got it: another client's reads as unknown,
 * and is left untouched.
 */
export function refreshTokenGrant(deps: GrantDeps, issuer: Issuer): GrantHandler {
  const { db, tokens, clock } = deps;
  return async (client, p, ip) => {
    if (!p.refresh_token) throw new DomainError('invalid_request', 'Missing parameter: refresh_token');
    const found = await tokens.findRefresh(p.refresh_token);
    if (!found || found.clientId !== client.id) throw new DomainError('invalid_grant', 'Invalid refresh token');
    if (found.expiresAt.getTime() <= clock.nowMs()) {
      await tokens.consumeRefresh(found.tokenHash);
      throw new DomainError('invalid_grant', 'Refresh token has expired');
    }
    // All or nothing: the refresh token is spent only if the new pair (with its event) is
    // stored and the session extended, so that a failure at any step leaves the client its old
    // refresh token to try again, never neither.
    const body = await db.transaction(async (tx) => {
      // Single use: of two concurrent refreshes only one gets the token (the other's DELETE
      // waits for the first transaction, then finds nothing; if the first rolls back, it wins).
      const used = await tokens.consumeRefresh(found.tokenHash, tx);
      if (!used) throw new DomainError('invalid_grant', 'Invalid refresh token');
      const lifetime = issuer.lifetimeOf({ expiresIn: String(used.accessExpiresIn) });
      const issued = await tokens.issue({
        subject: used.subject, clientId: client.id, scope: used.scope,
        lifetime, withRefreshToken: true, sessionId: used.sessionId,
        audit: { account: accountOf(used.subject), type: 'token.refreshed', ip, details: { client_id: client.id } },
      }, tx);
      // The session lives on: so do the temporary tokens taken from it.
      await tokens.extendSession(used.sessionId, lifetime.expiresAt, tx);
      return issued;
    });
    deps.issued?.('refresh_token');
    return body;
  };
}
