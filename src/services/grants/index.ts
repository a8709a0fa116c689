import { clientCredentialsGrant } from './client-credentials.grant.js';
import { createIssuer, type GrantDeps, type GrantHandler } from './grant.js';
import { mfaGrant } from './mfa.grant.js';
import { passwordGrant } from './password.grant.js';
import { refreshTokenGrant } from './refresh-token.grant.js';

export type { GrantDeps, GrantHandler, TokenParams } from './grant.js';

/**
 * The token endpoint's grants, keyed by `grant_type`: the one list of what Skyport supports,
 * which the endpoint looks a request's grant up in and the server metadata (RFC 8414) lists.
 */
export function createGrants(deps: GrantDeps): ReadonlyMap<string, GrantHandler> {
  const issuer = createIssuer(deps);
  return new Map<string, GrantHandler>([
    ['password', passwordGrant(deps, issuer)],
    ['client_credentials', clientCredentialsGrant(deps, issuer)],
    ['refresh_token', refreshTokenGrant(deps, issuer)],
    ['urn:custom:mfa-otp', mfaGrant(deps, issuer, false)],
    ['urn:custom:recovery-code', mfaGrant(deps, issuer, true)],
  ]);
}
