import { DomainError } from '../../domain/errors.js';
import { narrowScope, parseRequestedScope } from '../../domain/scopes.js';
import type { AuthenticatedClient } from '../clients.service.js';
import { clientScope, type GrantDeps, type GrantHandler, type Issuer } from './grant.js';

/**
 * The second step of a password login with MFA on (`urn:custom:mfa-otp` with a one-time
 * password, `urn:custom:recovery-code` with a recovery code): the token has the lifetime, scope
 * and client of the password request that started the login (docs/api.md, "OAuth").
 */
export function mfaGrant(deps: GrantDeps, issuer: Issuer, recovery: boolean): GrantHandler {
  const { mfa, audit } = deps;
  return async (client, p, ip) => {
    if (!p.mfa_token) throw new DomainError('invalid_request', recovery ? 'You must provide recovery_code and mfa token.' : 'You must provide otp and mfa token.');
    // The code and the challenge are spent in the same transaction as the token is stored.
    return mfa.completeLogin({
      mfaToken: p.mfa_token, clientId: client.id, ip,
      ...(recovery ? { recoveryCode: p.recovery_code ?? '' } : { otp: p.otp ?? '' }),
    }, async (user, challenge, tx) => {
      // A public client may send the code for another public client's login, and the token is
      // then the starter's.
      const starter: AuthenticatedClient = challenge.clientId !== null && challenge.clientId !== client.id ? { kind: 'public', id: challenge.clientId } : client;
      const scope = narrowScope(clientScope(starter), parseRequestedScope(challenge.request.scope).scope);
      await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.login', ip, details: { client_id: starter.id, mfa: recovery ? 'recovery_code' : 'otp' } }, tx);
      const lifetime = { expiresIn: challenge.request.expiresIn, expiresAt: challenge.request.expiresAt };
      return issuer.issueFor({ kind: 'user', userId: user.id }, starter, scope, lifetime, ip, recovery ? 'recovery-code' : 'mfa-otp', undefined, tx);
    });
  };
}
