import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { AuditService } from '../../services/audit.service.js';
import type { TokenService } from '../../services/tokens.service.js';
import { accountOf } from '../../services/audit-account.js';
import { authOf, type Guard } from '../auth.js';
import { OkBody, errorResponses } from '../schemas.js';

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
    const t = await tokens.authenticate(req.params.token).catch(() => {
      throw new DomainError('invalid_token', 'The access token provided is invalid.');
    });
    await tokens.revoke(hash);
    await audit.record({ account: accountOf(t.subject), type: 'token.revoked', ip: req.ip, details: { client_id: t.clientId, via: 'path' } });
    return { ok: true as const };
  });
}
