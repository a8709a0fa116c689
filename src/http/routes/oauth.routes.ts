import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { ClientService } from '../../services/clients.service.js';
import type { OAuthService } from '../../services/oauth.service.js';
import type { TokenParams } from '../../services/grants/index.js';
import { clientCredentialsOf } from '../credentials.js';
import { Str, errorResponses } from '../schemas.js';

const FORM = 'application/x-www-form-urlencoded';

const TokenForm = Type.Object({
  grant_type: Str(100),
  client_id: Type.Optional(Str(200)),
  client_secret: Type.Optional(Str(200)),
  username: Type.Optional(Str(254)),
  password: Type.Optional(Str(256)),
  scope: Type.Optional(Str(400)),
  expires_in: Type.Optional(Str(20)),
  expires_at: Type.Optional(Str(40)),
  refresh_token: Type.Optional(Str(200)),
  mfa_token: Type.Optional(Str(200)),
  otp: Type.Optional(Str(20)),
  recovery_code: Type.Optional(Str(64)),
}, { additionalProperties: true });

const TokenSuccess = Type.Object({
  token_type: Type.Literal('bearer'),
  access_token: Type.String(),
  expires_in: Type.Integer({ description: 'Seconds; 0 = never expires' }),
  refresh_token: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
});

const TokenOnlyForm = Type.Object({
  token: Str(200),
  token_type_hint: Type.Optional(Str(40)),
  client_id: Type.Optional(Str(200)),
  client_secret: Type.Optional(Str(200)),
}, { additionalProperties: true });

/** Where the OAuth endpoints are, for their routes and the server metadata (RFC 8414). */
export const OAUTH_PATHS = { token: '/oauth/token', introspection: '/oauth/introspect', revocation: '/oauth/revoke' } as const;

/** OAuth 2.0 endpoints: form-encoded only, client credentials from Basic or the body. */
export function oauthRoutes(app: FastifyInstance, deps: { oauth: OAuthService; clients: ClientService }): void {
  async function authenticatedClient(req: FastifyRequest) {
    const { id, secret } = clientCredentialsOf(req);
    return deps.clients.authenticate(id, secret, req.ip);
  }

  function requireForm(req: FastifyRequest): void {
    if (!String(req.headers['content-type'] ?? '').toLowerCase().startsWith(FORM)) {
      throw new DomainError('invalid_request', 'Method must be POST with application/x-www-form-urlencoded encoding');
    }
  }

  function noStore(reply: FastifyReply): void {
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
  }

  app.post<{ Body: TokenParams & { client_id?: string; client_secret?: string } }>(OAUTH_PATHS.token, {
    // Every grant, granted or not, counts against RATE_LIMIT_TOKENS (http/rate-limits.ts).
    config: { limit: 'tokens' },
    preValidation: async (req) => requireForm(req),
    schema: {
      tags: ['oauth'],
      summary: 'Create or renew an access token (RFC 6749)',
      description: 'Grants: password, client_credentials (scope=customer=<email> for a product customer), refresh_token, urn:custom:mfa-otp, urn:custom:recovery-code.',
      consumes: [FORM],
      body: TokenForm,
      response: { 200: TokenSuccess, ...errorResponses(400, 401, 403, 429) },
    },
  }, async (req, reply) => {
    noStore(reply);
    return deps.oauth.token(() => authenticatedClient(req), req.body, req.ip);
  });

  app.post<{ Body: { token: string; token_type_hint?: string } }>(OAUTH_PATHS.introspection, {
    preValidation: async (req) => requireForm(req),
    schema: {
      tags: ['oauth'],
      summary: 'Token introspection for trusted back-ends (RFC 7662)',
      consumes: [FORM],
      body: TokenOnlyForm,
      response: { 200: Type.Object({ active: Type.Boolean() }, { additionalProperties: true }), ...errorResponses(400, 429) },
    },
  }, async (req, reply) => {
    noStore(reply);
    const client = await authenticatedClient(req);
    return deps.oauth.introspect(client, req.body.token, req.body.token_type_hint);
  });

  app.post<{ Body: { token: string } }>(OAUTH_PATHS.revocation, {
    preValidation: async (req) => requireForm(req),
    schema: {
      tags: ['oauth'],
      summary: 'Token revocation (RFC 7009)',
      consumes: [FORM],
      body: TokenOnlyForm,
      response: { 200: Type.Object({ ok: Type.Literal(true) }), ...errorResponses(400, 429) },
    },
  }, async (req) => {
    const client = await authenticatedClient(req);
    await deps.oauth.revoke(client, req.body.token, req.ip);
    return { ok: true as const };
  });
}
