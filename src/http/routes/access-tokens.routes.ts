import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { AuditService } from '../../services/audit.service.js';
import type { TokenService } from '../../services/tokens.service.js';
import { accountOf } from '../../services/audit-account.js';
import { authOf, userIdOf, type Guard } from '../auth.js';
import { OkBody, Pagination, Str, bodyOptional, errorResponses } from '../schemas.js';
import { pageMeta } from '../../domain/paging.js';
import { TOKEN_ID_LENGTH, type AccessTokenRecord } from '../../repositories/tokens.repository.js';

/** A token as the account's list shows it: never its value, nor its whole digest. */
const TokenView = Type.Object({
  id: Type.String({ description: 'Names the token for revoking it; not a credential' }),
  client_id: Type.String(),
  scopes: Type.Array(Type.String()),
  created_at: Type.String(),
  expires_at: Type.Union([Type.String(), Type.Null()], { description: 'null: never expires' }),
  temporary: Type.Boolean({ description: 'Taken with POST /v1/access_tokens; ends with its session' }),
  current: Type.Boolean({ description: 'The token of this request' }),
  same_session: Type.Boolean({ description: 'Of the same session as the token of this request' }),
});

function viewOf(t: AccessTokenRecord, asker: AccessTokenRecord) {
  return {
    id: t.tokenHash.slice(0, TOKEN_ID_LENGTH),
    client_id: t.clientId,
    scopes: t.scope ? [t.scope] : [],
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt?.toISOString() ?? null,
    temporary: t.temporaryUntil !== null,
    current: t.tokenHash === asker.tokenHash,
    same_session: t.sessionId === asker.sessionId,
  };
}

/** /v1/access_tokens (docs/particle-compatibility.md#access-tokens-on-api-routes). */
export function accessTokenRoutes(app: FastifyInstance, deps: { tokens: TokenService; audit: AuditService; guard: Guard }): void {
  const { tokens, audit, guard } = deps;

  // A token of any scope may describe and revoke itself.
  app.get('/v1/access_tokens/current', {
    preHandler: guard({ anyScope: true }),
    schema: {
      tags: ['access tokens'],
      summary: 'Describe the token of this request',
      response: {
        200: Type.Object({
          expires_at: Type.Union([Type.String(), Type.Null()], { description: 'null: never expires' }),
          client: Type.String(),
          client_id: Type.String(),
          scopes: Type.Array(Type.String()),
          orgs: Type.Array(Type.Unknown()),
        }),
        ...errorResponses(400, 401),
      },
    },
  }, async (req) => {
    const t = authOf(req);
    // `client` is what the docs show and `client_id` what particle-api-js types (docs/particle-compatibility.md#access-tokens-on-api-routes).
    return { expires_at: t.expiresAt?.toISOString() ?? null, client: t.clientId, client_id: t.clientId, scopes: t.scope ? [t.scope] : [], orgs: [] };
  });

  app.delete('/v1/access_tokens/current', {
    preHandler: guard({ anyScope: true }),
    schema: { tags: ['access tokens'], summary: 'Revoke the token of this request (log out)', response: { 200: OkBody, ...errorResponses(400, 401) } },
  }, async (req) => {
    const t = authOf(req);
    await tokens.revoke(t.tokenHash);
    await audit.record({ account: accountOf(t.subject), type: 'token.revoked', ip: req.ip, details: { client_id: t.clientId, via: 'current' } });
    return { ok: true as const };
  });

  app.delete('/v1/access_tokens', {
    preHandler: guard(),
    schema: { tags: ['access tokens'], summary: 'Revoke every token of the account, this one included', response: { 200: OkBody, ...errorResponses(400, 401) } },
  }, async (req) => {
    const t = authOf(req);
    const n = await tokens.revokeSubject(t.subject, null);
    await audit.record({ account: accountOf(t.subject), type: 'tokens.revoked', ip: req.ip, details: { count: n, reason: 'asked' } });
    return { ok: true as const };
  });

  // A temporary token for the user's own code, tied to the session of the token that asks
  // (the web console's "API token"): revoked with it, never outliving it.
  app.post<{ Body: { expires_in?: number | string } }>('/v1/access_tokens', {
    preHandler: guard({ subjects: ['user'] }),
    preValidation: bodyOptional,
    schema: {
      tags: ['access tokens'],
      summary: 'Take a temporary token from the session of this token',
      description: 'Same account, client and scope; revoked when the session is (log-out, revocation of the session\'s token), expiring no later than the session, which a refresh carries it along with.',
      body: Type.Object({ expires_in: Type.Optional(Type.Union([Type.Integer(), Str(20)], { description: 'Seconds, 60 to 86400 (default)' })) }, { additionalProperties: true }),
      response: {
        201: Type.Object({ token_type: Type.Literal('bearer'), access_token: Type.String(), expires_in: Type.Integer(), expires_at: Type.String(), scope: Type.Optional(Type.String()) }),
        ...errorResponses(400, 401, 403),
      },
    },
  }, async (req, reply) => {
    const body = await tokens.issueTemporary(authOf(req), req.body.expires_in, req.ip);
    reply.code(201).header('Cache-Control', 'no-store');
    return body;
  });

  app.get<{ Querystring: { page?: number; per_page?: number } }>('/v1/user/access_tokens', {
    preHandler: guard({ subjects: ['user'] }),
    schema: {
      tags: ['access tokens'],
      summary: "The account's live access tokens, newest first, without their values",
      querystring: Type.Intersect([Pagination, Type.Object({ access_token: Type.Optional(Str(200)) })]),
      response: {
        200: Type.Object({ tokens: Type.Array(TokenView), meta: Type.Object({ page: Type.Integer(), per_page: Type.Integer(), total: Type.Integer(), total_pages: Type.Integer() }) }),
        ...errorResponses(400, 401, 403),
      },
    },
  }, async (req) => {
    const asker = authOf(req);
    const page = req.query.page ?? 1;
    const perPage = req.query.per_page ?? 25;
    const { tokens: found, total } = await tokens.listForUser(userIdOf(req), perPage, (page - 1) * perPage);
    return { tokens: found.map((t) => viewOf(t, asker)), meta: pageMeta(page, perPage, total) };
  });

  app.delete<{ Params: { id: string } }>('/v1/user/access_tokens/:id', {
    preHandler: guard({ subjects: ['user'] }),
    schema: {
      tags: ['access tokens'],
      summary: 'Revoke one of the account\'s tokens by its id (a session\'s own token takes its session)',
      params: Type.Object({ id: Type.String({ pattern: `^[0-9a-f]{${TOKEN_ID_LENGTH}}$` }) }),
      response: { 200: OkBody, ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => {
    const found = await tokens.findForUserById(userIdOf(req), req.params.id);
    if (!found) throw new DomainError('not_found', 'No such token of this account (revoked, expired or never issued)');
    await tokens.revoke(found.tokenHash);
    await audit.record({ account: accountOf(found.subject), type: 'token.revoked', ip: req.ip, details: { client_id: found.clientId, via: 'id' } });
    return { ok: true as const };
  });

  app.delete<{ Params: { token: string } }>('/v1/access_tokens/:token', {
    schema: {
      tags: ['access tokens'],
      summary: 'Revoke a token; the token in the path is the credential',
      description: 'particle-cli `token revoke` and particle-api-js deleteAccessToken send no other credential.',
      params: Type.Object({ token: Type.String({ maxLength: 200 }) }),
      response: { 200: OkBody, ...errorResponses(401) },
    },
  }, async (req) => {
    const hash = tokens.hash(req.params.token);
    // Only a token that is not live is invalid here; an unreachable store is not (503).
    const t = await tokens.authenticate(req.params.token);
    await tokens.revoke(hash);
    await audit.record({ account: accountOf(t.subject), type: 'token.revoked', ip: req.ip, details: { client_id: t.clientId, via: 'path' } });
    return { ok: true as const };
  });
}
