import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { KNOWN_SCOPES } from '../../domain/scopes.js';
import { publicOriginOf } from '../public-url.js';
import { errorResponses } from '../schemas.js';
import { OAUTH_PATHS } from './oauth.routes.js';

const METADATA_PATH = '/.well-known/oauth-authorization-server';

/** Client authentication at the token, introspection and revocation endpoints (RFC 6749 §2.3.1). */
const CLIENT_AUTH = ['client_secret_basic', 'client_secret_post'];

const Urls = Type.Array(Type.String());
const Metadata = Type.Object({
  issuer: Type.String({ description: 'PUBLIC_URL, or the scheme and host the request came to' }),
  token_endpoint: Type.String(),
  introspection_endpoint: Type.String(),
  revocation_endpoint: Type.String(),
  grant_types_supported: Urls,
  token_endpoint_auth_methods_supported: Urls,
  introspection_endpoint_auth_methods_supported: Urls,
  revocation_endpoint_auth_methods_supported: Urls,
  scopes_supported: Urls,
  response_types_supported: Urls,
});

/**
 * OAuth 2.0 Authorization Server Metadata (RFC 8414 §3), so that standard OAuth clients find the
 * endpoints, grants and client authentication methods from the issuer's URL alone.
 * `service_documentation` is left out: the server serves no page for people to read (docs/
 * comes with the code), and the OpenAPI document is for machines.
 */
export function oauthMetadataRoutes(app: FastifyInstance, deps: { grantTypes: readonly string[]; publicUrl: string | undefined }): void {
  app.get(METADATA_PATH, {
    schema: {
      tags: ['oauth'],
      summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
      security: [],
      response: { 200: Metadata, ...errorResponses(400) },
    },
  }, async (req, reply) => {
    const issuer = publicOriginOf(req, deps.publicUrl);
    // Taken from the request, the answer differs by the headers it was taken from.
    if (deps.publicUrl === undefined) reply.header('Vary', 'Host, X-Forwarded-Host, X-Forwarded-Proto');
    return {
      issuer,
      token_endpoint: `${issuer}${OAUTH_PATHS.token}`,
      introspection_endpoint: `${issuer}${OAUTH_PATHS.introspection}`,
      revocation_endpoint: `${issuer}${OAUTH_PATHS.revocation}`,
      grant_types_supported: [...deps.grantTypes],
      token_endpoint_auth_methods_supported: CLIENT_AUTH,
      introspection_endpoint_auth_methods_supported: CLIENT_AUTH,
      revocation_endpoint_auth_methods_supported: CLIENT_AUTH,
      // `customer=<email>` names a token's subject (docs/api.md, "OAuth"); it is not a scope
      // value one could list.
      scopes_supported: [...KNOWN_SCOPES],
      // Response types are the values of the authorization endpoint's response_type (RFC 6749
      // §3.1.1). Skyport has no authorization endpoint: every grant it has goes straight to the
      // token endpoint. RFC 8414 §2 requires the member all the same, so it is here and empty;
      // "code" would send clients to an endpoint that does not exist.
      response_types_supported: [],
    };
  });
}
