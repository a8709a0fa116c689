import { DomainError } from '../domain/errors.js';
import type { Scope } from '../domain/scopes.js';
import type { Subject } from '../domain/subject.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import { accountOf } from './audit-account.js';
import type { AuthenticatedClient } from './clients.service.js';
import { createGrants, type GrantDeps, type TokenParams } from './grants/index.js';
import { unlessInvalid, type TokenResponse } from './tokens.service.js';

/**
 * The OAuth 2.0 endpoints' work: the token endpoint's grants (RFC 6749; one module per grant in
 * `grants/`), token introspection (RFC 7662) and revocation (RFC 7009).
 */
export function createOAuthService(deps: GrantDeps) {
  const { tokens, audit, clock } = deps;
  const grants = createGrants(deps);

  /** Whether a client may introspect or revoke a token: it made it, or it belongs to the client's owner. */
  function reaches(client: AuthenticatedClient, t: { clientId: string; subject: Subject }): boolean {
    if (t.clientId === client.id) return true;
    if (client.kind !== 'registered') return false;
    const o = client.record.owner;
    if (o.kind === 'user') return t.subject.kind === 'user' && t.subject.userId === o.id;
    return t.subject.kind !== 'user' && t.subject.productId === o.id;
  }

  return {
    /** The grant types of the token endpoint, as the server metadata lists them (RFC 8414 §2). */
    grantTypes: [...grants.keys()],

    /**
     * POST /oauth/token. `authenticate` authenticates the client; it is called once the request
     * names a grant, so that a request without one costs the client no lock-out.
     */
    async token(authenticate: () => Promise<AuthenticatedClient>, p: TokenParams, ip: string): Promise<TokenResponse> {
      if (!p.grant_type) throw new DomainError('invalid_request', 'Missing parameter: grant_type');
      const client = await authenticate();
      const grant = grants.get(p.grant_type);
      if (!grant) throw new DomainError('unsupported_grant_type', `Unsupported grant_type; use one of ${[...grants.keys()].join(', ')}`);
      return grant(client, p, ip);
    },

    /** RFC 7662 §2.2. Anything the client may not see is simply inactive. */
    async introspect(client: AuthenticatedClient, token: string | undefined, hint: string | undefined) {
      if (client.kind !== 'registered') throw new DomainError('unauthorized_client', 'Token introspection is for registered clients of trusted back-ends');
      if (!token) throw new DomainError('invalid_request', 'Missing parameter: token');
      const inactive = { active: false } as const;
      const tryAccess = async () => {
        const t = await tokens.authenticate(token).catch(unlessInvalid);
        return t && reaches(client, t) ? describe(t, 'access_token') : undefined;
      };
      const tryRefresh = async () => {
        const r = await tokens.findRefresh(token);
        if (!r || r.expiresAt.getTime() <= clock.nowMs() || !reaches(client, r)) return undefined;
        return describe({ ...r, expiresAt: r.expiresAt }, 'refresh_token');
      };
      const order = hint === 'refresh_token' ? [tryRefresh, tryAccess] : [tryAccess, tryRefresh];
      for (const attempt of order) {
        const found = await attempt();
        if (found) return found;
      }
      return inactive;
    },

    /** RFC 7009 §2: the answer is the same whether or not the token existed. */
    async revoke(client: AuthenticatedClient, token: string | undefined, ip: string): Promise<void> {
      if (!token) throw new DomainError('invalid_request', 'Missing parameter: token');
      const hash = tokens.hash(token);
      const refresh = await tokens.findRefresh(token);
      if (refresh && reaches(client, refresh)) {
        // RFC 7009 §2.1: revoking a refresh token also revokes the access token made with it.
        await tokens.revokeRefresh(refresh);
        await audit.record({ account: accountOf(refresh.subject), type: 'token.revoked', ip, details: { client_id: client.id, via: 'oauth/revoke', kind: 'refresh_token' } });
        return;
      }
      const access: AccessTokenRecord | undefined = await tokens.authenticate(token).catch(unlessInvalid);
      if (!access || !reaches(client, access)) return;
      await tokens.revoke(hash);
      await audit.record({ account: accountOf(access.subject), type: 'token.revoked', ip, details: { client_id: client.id, via: 'oauth/revoke' } });
    },
  };

  function describe(t: { clientId: string; subject: Subject; scope: Scope; createdAt: Date; expiresAt: Date | null }, kind: string) {
    const sub = t.subject.kind === 'user' ? t.subject.userId : t.subject.kind === 'product' ? t.subject.productId : t.subject.customerId;
    const out: Record<string, unknown> = {
      active: true,
      token_type: kind === 'access_token' ? 'bearer' : 'refresh_token',
      client_id: t.clientId,
      scope: t.scope ?? '*:*',
      sub,
      subject_kind: t.subject.kind,
      iat: Math.floor(t.createdAt.getTime() / 1000),
    };
    if (t.expiresAt !== null) out.exp = Math.floor(t.expiresAt.getTime() / 1000);
    if (t.subject.kind !== 'user') out.product_id = t.subject.productId;
    return out;
  }
}

export type OAuthService = ReturnType<typeof createOAuthService>;
