import { DomainError } from '../domain/errors.js';
import { temporaryLifetime, type Lifetime } from '../domain/token-lifetime.js';
import { accountOf } from './audit-account.js';
import type { Scope } from '../domain/scopes.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { CacheHub } from '../platform/cache-hub.js';
import type { Subject } from '../domain/subject.js';
import type { AccessTokenRecord, RefreshTokenRecord, TokensRepository } from '../repositories/tokens.repository.js';
import { inTransaction, type Db, type Tx } from '../storage/db.js';
import type { Settings } from '../config/settings.js';
import { auditEvent, type AuditInput } from './audit.service.js';

/** The success body of the token endpoint (RFC 6749 §5.1; docs/api.md, "OAuth"). */
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
  /** Only tokens made with product clients get one (docs/api.md, "OAuth"), and never a non-expiring token. */
  withRefreshToken: boolean;
  /** Echoed as `scope` in the response (`customer=<email>` for customer tokens). */
  responseScope?: string | undefined;
  /** The security event of this issuance, stored in the same statement as the token. */
  audit?: AuditInput | undefined;
  /** The session the token continues (a refresh) or joins (a temporary token); none: a new session. */
  sessionId?: string | undefined;
  /** A temporary token's own limit (docs/api.md, "Access tokens"). */
  temporaryUntil?: Date | undefined;
}

/**
 * Access tokens: opaque random strings, stored only as SHA-256 digests. Verified tokens are kept
 * in memory for TOKEN_CACHE_SECONDS so that authenticated reads do not touch storage; revoking
 * evicts them, on every node, once the revocation has committed (a read racing it is not kept;
 * docs/architecture.md, "Caches in a cluster"). Revocations take the caller's transaction when
 * they are part of a larger write (a client's, an account's deletion), or run in one of their own.
 */
export function createTokenService(deps: { db: Db; repo: TokensRepository; secrets: Secrets; clock: Clock; settings: Settings; caches: CacheHub }) {
  const { db, repo, secrets, clock, settings } = deps;
  const cache = deps.caches.cache<AccessTokenRecord>('tokens', settings.tokenCacheSeconds * 1000);
  // Tokens that are not in storage, remembered briefly so that a flood of made-up tokens does
  // not turn into a flood of storage reads. Safe: a token is random, so nobody can present it
  // before it is issued, and a revoked one stays revoked. Nothing ever makes an entry wrong, so
  // it is this node's own and tells no other node anything.
  const unknown = new TtlCache<true>(clock, 10_000, 10_000);

  /**
   * Stores a new token (and its refresh token and event) and answers the token endpoint's body.
   * On its own it goes with other requests' tokens in the next batch (the hot path); with `tx`,
   * when it is part of a larger write (a refresh, a customer's creation), it is written at once
   * in that transaction and is issued only if the rest commits.
   */
  async function issue(req: IssueRequest, tx?: Tx): Promise<TokenResponse> {
    const now = clock.now();
    const accessToken = secrets.token();
    const tokenHash = secrets.sha256(accessToken);
    const access: AccessTokenRecord = {
      tokenHash,
      subject: req.subject,
      clientId: req.clientId,
      scope: req.scope,
      createdAt: now,
      expiresAt: req.lifetime.expiresAt,
      // A new session is named by its first token, which then needs no entry in the session
      // index (migrations/0016_token_session_index.sql).
      sessionId: req.sessionId ?? tokenHash,
      temporaryUntil: req.temporaryUntil ?? null,
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
        sessionId: access.sessionId,
        createdAt: now,
        // Counted from the access token's expiry (REFRESH_TOKEN_LIFETIME_SECONDS, docs/configuration.md).
        expiresAt: new Date(req.lifetime.expiresAt.getTime() + settings.refreshTokenLifetimeSeconds * 1000),
      };
    }
    await repo.insert(access, refresh, req.audit && auditEvent(req.audit, now), tx);
    const body: TokenResponse = { token_type: 'bearer', access_token: accessToken, expires_in: req.lifetime.expiresIn };
    if (refreshToken !== undefined) body.refresh_token = refreshToken;
    const scopeText = req.responseScope ?? req.scope ?? undefined;
    if (scopeText) body.scope = scopeText;
    return body;
  }

  /**
   * The record of a live token held in memory, without waiting: undefined when it must be looked
   * up (authenticate). Throws invalid_token for one known to be unknown, revoked or expired.
   */
  function known(token: string): { hash: string; record: AccessTokenRecord | undefined } {
    if (token.length === 0 || token.length > 200) throw invalid();
    const hash = secrets.sha256(token);
    const record = cache.get(hash);
    if (record) return { hash, record: live(hash, record) };
    if (unknown.get(hash)) throw invalid();
    return { hash, record: undefined };
  }

  function live(hash: string, record: AccessTokenRecord): AccessTokenRecord {
    if (record.expiresAt !== null && record.expiresAt.getTime() <= clock.nowMs()) {
      // Every node sees the expiry for itself: nothing to announce.
      cache.drop(hash);
      throw new DomainError('invalid_token', 'The access token provided has expired.');
    }
    return record;
  }

  /** The record of a live token; invalid_token (401) for unknown, revoked or expired ones. */
  async function authenticate(token: string): Promise<AccessTokenRecord> {
    const { hash, record } = known(token);
    if (record) return record;
    const loaded = await cache.load(hash, () => repo.findAccess(hash));
    if (!loaded) {
      unknown.set(hash, true);
      throw invalid();
    }
    return live(hash, loaded);
  }

  /** Drops revoked tokens from every node's cache once the revocation commits. */
  function forgetOnCommit(tx: Tx, hashes: string[]): void {
    tx.afterCommit(() => {
      for (const h of hashes) cache.delete(h);
    });
  }

  /**
   * A temporary token taken from `asker`'s session (POST /v1/access_tokens): the same subject,
   * client and scope, in the same session, so that it is revoked with the session and expires
   * with it (docs/api.md, "Access tokens").
   */
  async function issueTemporary(asker: AccessTokenRecord, expiresIn: number | string | undefined, ip: string): Promise<TokenResponse & { expires_at: string }> {
    if (asker.temporaryUntil !== null) throw new DomainError('forbidden', 'A temporary token cannot take another: use the token of the session');
    const lifetime = temporaryLifetime(expiresIn, clock.now(), asker.expiresAt);
    const body = await issue({
      subject: asker.subject, clientId: asker.clientId, scope: asker.scope, lifetime, withRefreshToken: false,
      sessionId: asker.sessionId, temporaryUntil: lifetime.until,
      audit: { account: accountOf(asker.subject), type: 'token.created', ip, details: { client_id: asker.clientId, grant: 'temporary', expires_in: lifetime.expiresIn } },
    });
    return { ...body, expires_at: (lifetime.expiresAt as Date).toISOString() };
  }

  return {
    issue,
    issueTemporary,
    authenticate,
    /** authenticate's answer when it needs no wait (the guard's fast path, src/http/auth.ts). */
    cachedRecord: (token: string): AccessTokenRecord | undefined => known(token).record,
    hash: (token: string) => secrets.sha256(token),
    /**
     * Revokes an access token and the refresh tokens made with it; a session's own token (not a
     * temporary one) takes the session's tokens up to it and its temporary tokens with it.
     */
    revoke: (tokenHash: string): Promise<AccessTokenRecord | undefined> => db.transaction(async (t) => {
      const { record, gone } = await repo.deleteAccess(tokenHash, t);
      forgetOnCommit(t, gone);
      return record;
    }),
    /** Revokes a refresh token and the rest of its session (RFC 7009 §2.1: the access tokens of the same grant). */
    revokeRefresh: (refresh: RefreshTokenRecord): Promise<void> => db.transaction(async (t) => {
      await repo.consumeRefresh(refresh.tokenHash, t);
      const gone = await repo.deleteSession(refresh.sessionId, t);
      forgetOnCommit(t, gone);
    }),
    /**
     * A session renewed (a refresh) until `until`: its temporary tokens live on with it. Their
     * cached records are dropped on every node, so that none refuses them at the old limit.
     */
    extendSession: (sessionId: string, until: Date | null, tx?: Tx): Promise<void> => inTransaction(db, tx, async (t) => {
      if (until === null) return;
      forgetOnCommit(t, await repo.extendTemporary(sessionId, until, clock.now(), t));
    }),
    /** A user's live tokens (never their values), a page of them. */
    listForUser: (userId: string, limit: number, offset: number) => repo.listForUser(userId, clock.now(), limit, offset),
    findForUserById: (userId: string, id: string) => repo.findForUserById(userId, id),
    /** Revokes every token of a subject but `keepHash`; answers how many access tokens. */
    revokeSubject: (subject: Subject, keepHash: string | null, tx?: Tx): Promise<number> => inTransaction(db, tx, async (t) => {
      const gone = await repo.deleteForSubject(subject, keepHash, t);
      forgetOnCommit(t, gone);
      return gone.length;
    }),
    /** Revokes the tokens of a product and of its customers, within a product's deletion. */
    async revokeProduct(productId: string, tx: Tx): Promise<number> {
      const gone = await repo.deleteForProduct(productId, tx);
      forgetOnCommit(tx, gone);
      return gone.length;
    },
    /** Revokes the tokens made with these clients, within their deletion. */
    async revokeClients(clientIds: readonly string[], tx: Tx): Promise<number> {
      const gone = await repo.deleteForClients(clientIds, tx);
      forgetOnCommit(tx, gone);
      return gone.length;
    },
    findRefresh: (refreshToken: string) => repo.findRefresh(secrets.sha256(refreshToken)),
    /** Spends a refresh token: on its own, or within the caller's transaction (a refresh). */
    consumeRefresh: (refreshHash: string, tx?: Tx) => repo.consumeRefresh(refreshHash, tx),
    purgeExpired: () => db.transaction((t) => repo.purgeExpired(clock.now(), t)),
  };
}

function invalid(): DomainError {
  return new DomainError('invalid_token', 'The access token provided is invalid.');
}

/**
 * For `authenticate(…).catch(unlessInvalid)`: undefined for a token that is not live, and any
 * other failure (the store unreachable) thrown, so that it is never taken for an unknown token.
 */
export function unlessInvalid(err: unknown): undefined {
  if (err instanceof DomainError && err.code === 'invalid_token') return undefined;
  throw err;
}

export type TokenService = ReturnType<typeof createTokenService>;
