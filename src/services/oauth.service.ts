import { DomainError } from '../domain/errors.js';
import { narrowScope, parseRequestedScope, type Scope } from '../domain/scopes.js';
import { resolveLifetime } from '../domain/token-lifetime.js';
import type { Clock } from '../platform/clock.js';
import type { Settings } from '../config/settings.js';
import type { AccessTokenRecord, Subject } from '../repositories/tokens.repository.js';
import type { AccountService } from './accounts.service.js';
import type { AuditService } from './audit.service.js';
import { accountOf } from './audit-account.js';
import type { AuthenticatedClient } from './clients.service.js';
import type { CustomerDirectory } from './customer-directory.js';
import type { MfaService } from './mfa.service.js';
import type { TokenResponse, TokenService } from './tokens.service.js';

/** The parameters of POST /oauth/token, all strings as form encoding gives them. */
export interface TokenParams {
  grant_type?: string;
  username?: string;
  password?: string;
  scope?: string;
  expires_in?: string;
  expires_at?: string;
  refresh_token?: string;
  mfa_token?: string;
  otp?: string;
  recovery_code?: string;
}

export type GrantOutcome = { kind: 'token'; body: TokenResponse };

const GRANTS = ['password', 'client_credentials', 'refresh_token', 'urn:custom:mfa-otp', 'urn:custom:recovery-code'] as const;

/**
 * The token endpoint's grants (RFC 6749 §4.3 password, §4.4 client credentials, §6 refresh, and
 * the MFA steps of reference §1), token introspection (RFC 7662) and revocation (RFC 7009).
 */
export function createOAuthService(deps: {
  tokens: TokenService;
  accounts: AccountService;
  mfa: MfaService;
  customers: CustomerDirectory;
  audit: AuditService;
  clock: Clock;
  settings: Settings;
}) {
  const { tokens, accounts, mfa, audit, clock, settings } = deps;

  const lifetimeOf = (p: { expiresIn?: string | undefined; expiresAt?: string | undefined }) => resolveLifetime(p, clock.now(), settings.tokenLifetimeSeconds);

  async function issueFor(subject: Subject, client: AuthenticatedClient, scope: Scope, params: { expiresIn?: string | undefined; expiresAt?: string | undefined }, ip: string, grant: string, responseScope?: string) {
    const lifetime = lifetimeOf(params);
    const productClient = client.kind === 'registered' && client.record.owner.kind === 'product';
    return tokens.issue({
      subject, clientId: client.id, scope, lifetime, withRefreshToken: productClient, responseScope,
      audit: { account: accountOf(subject), type: 'token.created', ip, details: { client_id: client.id, grant, expires_in: lifetime.expiresIn, scope } },
    });
  }

  function clientScope(client: AuthenticatedClient): Scope {
    return client.kind === 'registered' ? client.record.scope : null;
  }

  async function passwordGrant(client: AuthenticatedClient, p: TokenParams, ip: string): Promise<TokenResponse> {
    if (!p.username || !p.password) throw new DomainError('invalid_client', 'Missing parameters. "username" and "password" are required');
    const requested = parseRequestedScope(p.scope);
    if (requested.customerEmail !== undefined) throw new DomainError('invalid_scope', 'customer= is for the client_credentials grant');

    // A product client's password grant logs in one of the product's customers (simple auth,
    // SPEC.md §5.5). The client's customers:create scope limits the app's own credentials, not
    // the customer: the customer's token must reach the customer's devices.
    if (client.kind === 'registered' && client.record.owner.kind === 'product') {
      const productId = client.record.owner.id;
      const customer = await deps.customers.verifyPassword(productId, p.username, p.password, ip);
      if (!customer) throw new DomainError('invalid_grant', 'User credentials are invalid');
      return issueFor({ kind: 'customer', customerId: customer.id, productId }, client, narrowScope(null, requested.scope), { expiresIn: p.expires_in, expiresAt: p.expires_at }, ip, 'password');
    }
    const scope = narrowScope(clientScope(client), requested.scope);

    const user = await accounts.verifyPassword(p.username, p.password, ip);
    // A user's own client logs in only its owner; Particle's public clients log in anybody.
    if (client.kind === 'registered' && client.record.owner.id !== user.id) {
      throw new DomainError('unauthorized_client', 'This client may log in only the account that owns it');
    }
    // Validate the lifetime before asking for a second factor, so that the OTP step cannot fail on it.
    lifetimeOf({ expiresIn: p.expires_in, expiresAt: p.expires_at });
    if (user.mfaSecret !== null) {
      const request: Record<string, string> = {};
      if (p.expires_in !== undefined) request.expiresIn = p.expires_in;
      if (p.expires_at !== undefined) request.expiresAt = p.expires_at;
      if (p.scope !== undefined) request.scope = p.scope;
      const mfaToken = await mfa.openLogin(user, client.id, request);
      throw new DomainError('mfa_required', 'Multi-factor authentication required', { details: { mfa_token: mfaToken } });
    }
    await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.login', ip, details: { client_id: client.id } });
    return issueFor({ kind: 'user', userId: user.id }, client, scope, { expiresIn: p.expires_in, expiresAt: p.expires_at }, ip, 'password');
  }

  async function mfaGrant(client: AuthenticatedClient, p: TokenParams, ip: string, recovery: boolean): Promise<TokenResponse> {
    if (!p.mfa_token) throw new DomainError('invalid_request', recovery ? 'You must provide recovery_code and mfa token.' : 'You must provide otp and mfa token.');
    const { user, challenge } = await mfa.completeLogin({
      mfaToken: p.mfa_token, clientId: client.id, ip,
      ...(recovery ? { recoveryCode: p.recovery_code ?? '' } : { otp: p.otp ?? '' }),
    });
    // The lifetime, scope and client of the original password request (reference §1): a public
    // client may send the code for another public client's login, and the token is the starter's.
    const starter: AuthenticatedClient = challenge.clientId !== null && challenge.clientId !== client.id ? { kind: 'public', id: challenge.clientId } : client;
    const scope = narrowScope(clientScope(starter), parseRequestedScope(challenge.request.scope).scope);
    await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.login', ip, details: { client_id: starter.id, mfa: recovery ? 'recovery_code' : 'otp' } });
    return issueFor({ kind: 'user', userId: user.id }, starter, scope, { expiresIn: challenge.request.expiresIn, expiresAt: challenge.request.expiresAt }, ip, recovery ? 'recovery-code' : 'mfa-otp');
  }

  async function clientCredentialsGrant(client: AuthenticatedClient, p: TokenParams, ip: string): Promise<TokenResponse> {
    if (client.kind !== 'registered') throw new DomainError('invalid_grant', 'Client credentials are invalid');
    const owner = client.record.owner;
    const requested = parseRequestedScope(p.scope);
    const params = { expiresIn: p.expires_in, expiresAt: p.expires_at };
    if (requested.customerEmail !== undefined) {
      if (owner.kind !== 'product') throw new DomainError('invalid_scope', 'customer= needs a client that belongs to a product');
      // Only a full-scope (two-legged server) client may act for customers (SPEC.md §5.5).
      if (client.record.scope !== null) throw new DomainError('invalid_scope', `The client's scope (${client.record.scope}) does not allow customer tokens`);
      const customer = await deps.customers.findByEmail(owner.id, requested.customerEmail);
      if (!customer) throw new DomainError('invalid_grant', `No customer ${requested.customerEmail.slice(0, 254)} in this product`);
      return issueFor({ kind: 'customer', customerId: customer.id, productId: owner.id }, client, narrowScope(null, requested.scope), params, ip, 'client_credentials', `customer=${customer.email}`);
    }
    const subject: Subject = owner.kind === 'user' ? { kind: 'user', userId: owner.id } : { kind: 'product', productId: owner.id };
    return issueFor(subject, client, narrowScope(client.record.scope, requested.scope), params, ip, 'client_credentials');
  }

  async function refreshGrant(client: AuthenticatedClient, p: TokenParams, ip: string): Promise<TokenResponse> {
    if (!p.refresh_token) throw new DomainError('invalid_request', 'Missing parameter: refresh_token');
    const found = await tokens.findRefresh(p.refresh_token);
    // Another client's refresh token reads as unknown (reference §1), and is left untouched.
    if (!found || found.clientId !== client.id) throw new DomainError('invalid_grant', 'Invalid refresh token');
    if (found.expiresAt.getTime() <= clock.nowMs()) {
      await tokens.consumeRefresh(found.tokenHash);
      throw new DomainError('invalid_grant', 'Refresh token has expired');
    }
    // Single use: of two concurrent refreshes only one gets the token.
    const used = await tokens.consumeRefresh(found.tokenHash);
    if (!used) throw new DomainError('invalid_grant', 'Invalid refresh token');
    const body = await tokens.issue({
      subject: used.subject, clientId: client.id, scope: used.scope,
      lifetime: lifetimeOf({ expiresIn: String(used.accessExpiresIn) }), withRefreshToken: true,
    });
    await audit.record({ account: accountOf(used.subject), type: 'token.refreshed', ip, details: { client_id: client.id } });
    return body;
  }

  /** Whether a client may introspect or revoke a token: it made it, or it belongs to the client's owner. */
  function reaches(client: AuthenticatedClient, t: { clientId: string; subject: Subject }): boolean {
    if (t.clientId === client.id) return true;
    if (client.kind !== 'registered') return false;
    const o = client.record.owner;
    if (o.kind === 'user') return t.subject.kind === 'user' && t.subject.userId === o.id;
    return t.subject.kind !== 'user' && t.subject.productId === o.id;
  }

  return {
    async token(client: AuthenticatedClient, p: TokenParams, ip: string): Promise<TokenResponse> {
      const grant = p.grant_type;
      if (!grant) throw new DomainError('invalid_request', 'Missing parameter: grant_type');
      switch (grant as (typeof GRANTS)[number]) {
        case 'password': return passwordGrant(client, p, ip);
        case 'client_credentials': return clientCredentialsGrant(client, p, ip);
        case 'refresh_token': return refreshGrant(client, p, ip);
        case 'urn:custom:mfa-otp': return mfaGrant(client, p, ip, false);
        case 'urn:custom:recovery-code': return mfaGrant(client, p, ip, true);
        default: throw new DomainError('unsupported_grant_type', `Unsupported grant_type; use one of ${GRANTS.join(', ')}`);
      }
    },

    /** RFC 7662 §2.2. Anything the client may not see is simply inactive. */
    async introspect(client: AuthenticatedClient, token: string | undefined, hint: string | undefined) {
      if (client.kind !== 'registered') throw new DomainError('unauthorized_client', 'Token introspection is for registered clients of trusted back-ends');
      if (!token) throw new DomainError('invalid_request', 'Missing parameter: token');
      const inactive = { active: false } as const;
      const tryAccess = async () => {
        try {
          const t = await tokens.authenticate(token);
          return reaches(client, t) ? describe(t, 'access_token') : undefined;
        } catch {
          return undefined;
        }
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
        await tokens.consumeRefresh(refresh.tokenHash);
        // RFC 7009 §2.1: revoking a refresh token also revokes the access token made with it.
        await tokens.revoke(refresh.accessTokenHash);
        await audit.record({ account: accountOf(refresh.subject), type: 'token.revoked', ip, details: { client_id: client.id, via: 'oauth/revoke', kind: 'refresh_token' } });
        return;
      }
      let access: AccessTokenRecord | undefined;
      try {
        access = await tokens.authenticate(token);
      } catch {
        return;
      }
      if (!reaches(client, access)) return;
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
