import type { Scope } from '../../domain/scopes.js';
import type { Subject } from '../../domain/subject.js';
import { resolveLifetime, type Lifetime } from '../../domain/token-lifetime.js';
import type { Clock } from '../../platform/clock.js';
import type { Settings } from '../../config/settings.js';
import type { Db, Tx } from '../../storage/db.js';
import type { AccountService } from '../accounts.service.js';
import type { AuditService } from '../audit.service.js';
import { accountOf } from '../audit-account.js';
import { CONSOLE_CLIENT_ID, type AuthenticatedClient } from '../clients.service.js';
import type { CustomerDirectory } from '../customer-directory.js';
import type { MfaService } from '../mfa.service.js';
import type { TokenResponse, TokenService } from '../tokens.service.js';

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

/** One grant of the token endpoint: an authenticated client's request turned into a token. */
export type GrantHandler = (client: AuthenticatedClient, params: TokenParams, ip: string) => Promise<TokenResponse>;

export interface GrantDeps {
  /** The store, for the grants whose writes are one transaction (a refresh, an MFA login's last step). */
  db: Db;
  tokens: TokenService;
  accounts: AccountService;
  mfa: MfaService;
  customers: CustomerDirectory;
  audit: AuditService;
  clock: Clock;
  settings: Settings;
  /** Told of each token issued, by grant type: the node's metrics. */
  issued?: (grant: string) => void;
}

/** The lifetime asked for (`expires_in`, `expires_at`), or the default one. */
export interface LifetimeRequest { expiresIn?: string | undefined; expiresAt?: string | undefined }

/** What every grant does once it knows whom the token is for. */
export function createIssuer(deps: GrantDeps) {
  const { tokens, clock, settings } = deps;
  const lifetimeOf = (p: LifetimeRequest): Lifetime => resolveLifetime(p, clock.now(), settings.tokenLifetimeSeconds);
  return {
    lifetimeOf,
    /**
     * A token with its `token.created` event; tokens made with a product's client or the
     * console's get a refresh token. With `tx` (a grant whose other writes are a transaction),
     * the token is written in it, and counted once it commits.
     */
    issueFor(subject: Subject, client: AuthenticatedClient, scope: Scope, params: LifetimeRequest, ip: string, grant: string, responseScope?: string, tx?: Tx): Promise<TokenResponse> {
      const lifetime = lifetimeOf(params);
      const productClient = client.kind === 'registered' && client.record.owner.kind === 'product';
      // The web console renews its short-lived token while it is open (docs/api.md, "OAuth").
      const withRefreshToken = productClient || client.id === CONSOLE_CLIENT_ID;
      return tokens.issue({
        subject, clientId: client.id, scope, lifetime, withRefreshToken, responseScope,
        audit: { account: accountOf(subject), type: 'token.created', ip, details: { client_id: client.id, grant, expires_in: lifetime.expiresIn, scope } },
      }, tx).then((answer) => {
        if (tx) tx.afterCommit(() => deps.issued?.(grant));
        else deps.issued?.(grant);
        return answer;
      });
    },
  };
}

export type Issuer = ReturnType<typeof createIssuer>;

/** The scope a client's tokens may have at most (a public client: full, narrowed by the subject's rights). */
export function clientScope(client: AuthenticatedClient): Scope {
  return client.kind === 'registered' ? client.record.scope : null;
}

/** The lifetime fields of a token request. */
export const lifetimeRequest = (p: TokenParams): LifetimeRequest => ({ expiresIn: p.expires_in, expiresAt: p.expires_at });
