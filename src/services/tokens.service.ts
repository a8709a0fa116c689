import { DomainError } from '../domain/errors.js';
import type { Lifetime } from '../domain/token-lifetime.js';
import type { Scope } from '../domain/scopes.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { Subject } from '../domain/subject.js';
import type { AccessTokenRecord, TokensRepository } from '../repositories/tokens.repository.js';
import type { Settings } from '../config/settings.js';
import { auditEvent, type AuditInput } from './audit.service.js';

/** The success body of the token endpoint (RFC 6749 §5.1, reference §1). */
export interface TokenResponse {
  token_type: 'bearer';
  access_token: string;
  expires_in: number;
  refresh_token?: string;
  scope?: string;
}

export interface IssueRequest {
  subject: Subject;
  clientId: string;
  scope: Scope;
  lifetime: Lifetime;
  /** Only tokens made with product clients get one (SPEC.md §2.2), and never a non-expiring token. */
  withRefreshToken: boolean;
  /** Echoed as `scope` in the response (`customer=<email>` for customer tokens). */
  responseScope?: string | undefined;
  /** The security event of this issuance, stored in the same statement as the token. */
  audit?: AuditInput | undefined;
}

/**
 * Access tokens: opaque random strings, stored only as SHA-256 digests. Verified tokens are kept
 * in memory for TOKEN_CACHE_SECONDS so that authenticated reads do not touch storage; revoking
 * on this node evicts them at once.
 */
export function createTokenService(deps: { repo: TokensRepository; secrets: Secrets; clock: Clock; settings: Settings }) {
  const { repo, secrets, clock, settings } = deps;
  const cache = new TtlCache<AccessTokenRecord>(clock, settings.tokenCacheSeconds * 1000);
  // Tokens that are not in storage, remembered briefly so that a flood of made-up tokens does
  // not turn into a flood of storage reads. Safe: a token is random, so nobody can present it
  // before it is issued, and a revoked one stays revoked.
  const unknown = new TtlCache<true>(clock, 10_000, 10_000);

  async function issue(req: IssueRequest): Promise<TokenResponse> {
    const now = clock.now();
    const accessToken = secrets.token();
    const access: AccessTokenRecord = {
      tokenHash: secrets.sha256(accessToken),
      subject: req.subject,
      clientId: req.clientId,
      scope: req.scope,
      createdAt: now,
      expiresAt: req.lifetime.expiresAt,
    };
    let refreshToken: string | undefined;
    let refresh;
    if (req.withRefreshToken && req.lifetime.expiresAt !== null) {
      refreshToken = secrets.token();
      refresh = {
        tokenHash: secrets.sha256(refreshToken),
        accessTokenHash: access.tokenHash,
        subject: req.subject,
        clientId: req.clientId,
        scope: req.scope,
        accessExpiresIn: req.lifetime.expiresIn,
        createdAt: now,
        // Counted from the access token's expiry (reference §1).
        expiresAt: new Date(req.lifetime.expiresAt.getTime() + settings.refreshTokenLifetimeSeconds * 1000),
      };
    }
    await repo.insert(access, refresh, req.audit && auditEvent(req.audit, now));
    const body: TokenResponse = { token_type: 'bearer', access_token: accessToken, expires_in: req.lifetime.expiresIn };
    if (refreshToken !== undefined) body.refresh_token = refreshToken;
    const scopeText = req.responseScope ?? req.scope ?? undefined;
    if (scopeText) body.scope = scopeText;
    return body;
  }

  /** The record of a live token; invalid_token (401) for unknown, revoked or expired ones. */
  async function authenticate(token: string): Promise<AccessTokenRecord> {
    if (token.length === 0 || token.length > 200) throw invalid();
    const hash = secrets.sha256(token);
    let record = cache.get(hash);
    if (!record) {
      if (unknown.get(hash)) throw invalid();
      record = await repo.findAccess(hash);
      if (!record) {
        unknown.set(hash, true);
        throw invalid();
      }
      cache.set(hash, record);
    }
    if (record.expiresAt !== null && record.expiresAt.getTime() <= clock.nowMs()) {
      cache.delete(hash);
      throw new DomainError('invalid_token', 'The access token provided has expired.');
    }
    return record;
  }

  function forget(hashes: string[]): void {
    for (const h of hashes) cache.delete(h);
  }

  return {
    issue,
    authenticate,
    hash: (token: string) => secrets.sha256(token),
    async revoke(tokenHash: string): Promise<AccessTokenRecord | undefined> {
      forget([tokenHash]);
      return repo.deleteAccess(tokenHash);
    },
    async revokeSubject(subject: Subject, keepHash: string | null): Promise<number> {
      const gone = await repo.deleteForSubject(subject, keepHash);
      forget(gone);
      return gone.length;
    },
    async revokeProduct(productId: string): Promise<number> {
      const gone = await repo.deleteForProduct(productId);
      forget(gone);
      return gone.length;
    },
    async revokeClient(clientId: string): Promise<number> {
      const gone = await repo.deleteForClient(clientId);
      forget(gone);
      return gone.length;
    },
    findRefresh: (refreshToken: string) => repo.findRefresh(secrets.sha256(refreshToken)),
    consumeRefresh: (refreshHash: string) => repo.consumeRefresh(refreshHash),
    purgeExpired: () => repo.purgeExpired(clock.now()),
  };
}

function invalid(): DomainError {
  return new DomainError('invalid_token', 'The access token provided is invalid.');
}

export type TokenService = ReturnType<typeof createTokenService>;
