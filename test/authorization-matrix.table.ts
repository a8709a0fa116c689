/**
 * The authorization matrix: for every route of the API and every kind of credential, what the
 * answer must be. Written by hand from the rules (docs/api.md, docs/security.md), never from what the
 * server answers: test/authorization-matrix.test.ts fires every cell against a real server, and
 * scripts/gen-matrix.ts writes this table into docs/security.md.
 */

/** The credential kinds, in column order. */
export const CREDENTIALS = [
  { id: 'none', label: 'none', description: 'no credential at all' },
  { id: 'malformed', label: 'malformed', description: '`Authorization: Bearer !!!`, a token that was never issued' },
  { id: 'expired', label: 'expired', description: "a token of the owner's, made with `expires_in=60`, a minute and more ago" },
  { id: 'revoked', label: 'revoked', description: "a token of the owner's, revoked with `DELETE /v1/access_tokens/current`" },
  { id: 'owner', label: 'owner', description: 'the user who created the product (a team member) and owns a claimed device' },
  { id: 'otherUser', label: 'other user', description: 'a signed-up user with no relation to the product' },
  { id: 'member', label: 'team member', description: 'a user invited to the product team' },
  { id: 'product', label: 'product', description: 'a `client_credentials` token of a full-scope client of the product' },
  { id: 'customer', label: 'own customer', description: 'the product customer who claimed the device' },
  { id: 'otherCustomer', label: 'other customer', description: 'another customer of the same product' },
  { id: 'customersCreate', label: 'customers:create', description: 'a `client_credentials` token of a product client whose scope is `customers:create`' },
  { id: 'otherProduct', label: 'other product', description: 'a product token of another product' },
] as const;

export type CredentialId = (typeof CREDENTIALS)[number]['id'];

/** 'ok': any 2xx answer; a number: exactly that refusal. */
export type Outcome = 'ok' | 400 | 401 | 403 | 404 | 409;

/**
 * How the route takes its credential:
 * - bearer: an access token (Authorization header, or access_token in the query or body);
 * - path: the access token is the path parameter `{token}` (particle-cli `token revoke`);
 * - client: OAuth client authentication (HTTP Basic or client_id/client_secret); an access token
 *   is not a credential there, so the tokens of the columns are sent and ignored;
 * - public: no credential needed.
 */
export type CredentialPlace = 'bearer' | 'path' | 'client' | 'public';

export interface RouteRule {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The path as the OpenAPI document spells it ({param}). */
  path: string;
  place: CredentialPlace;
  /** The route is not in /v1/openapi.json (the document does not list itself). */
  undocumented?: boolean;
  /** An allowed request changes what the other cells rely on: each cell gets fixtures of its own. */
  destructive?: boolean;
  /** What the request is about, when the path does not say (shown in the docs). */
  target?: string;
  expect: Record<CredentialId, Outcome>;
}

/** Parses a row of 12 cells, in the order of CREDENTIALS: ✓ or a status. */
function cells(row: string): Record<CredentialId, Outcome> {
  const parts = row.trim().split(/\s+/);
  if (parts.length !== CREDENTIALS.length) throw new Error(`a matrix row needs ${CREDENTIALS.length} cells: ${row}`);
  const out = {} as Record<CredentialId, Outcome>;
  CREDENTIALS.forEach((c, i) => {
    const p = parts[i] as string;
    if (p === '✓') out[c.id] = 'ok';
    else if (['400', '401', '403', '404', '409'].includes(p)) out[c.id] = Number(p) as Outcome;
    else throw new Error(`bad matrix cell ${p} in: ${row}`);
  });
  return out;
}

type Row = [RouteRule['method'], string, CredentialPlace, string, Partial<Pick<RouteRule, 'undocumented' | 'destructive' | 'target'>>?];

// Columns:                                                                 none mal. exp. rev. own. oth. mem. prd. cus. ocu. c:c  opr.
const ROWS: Row[] = [
  ['GET', '/healthz', 'public',                                             '✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓'],
  ['GET', '/v1/openapi.json', 'public',                                     '✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓', { undocumented: true }],
  ['POST', '/v1/users', 'public',                                           '✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓'],
  ['GET', '/.well-known/oauth-authorization-server', 'public',              '✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓'],
  ['POST', '/oauth/token', 'client',                                        '400 400 400 400 400 400 400 400 400 400 400 400'],
  ['POST', '/oauth/introspect', 'client',                                   '400 400 400 400 400 400 400 400 400 400 400 400'],
  ['POST', '/oauth/revoke', 'client',                                       '400 400 400 400 400 400 400 400 400 400 400 400'],

  ['GET', '/v1/access_tokens/current', 'bearer',                            '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓'],
  ['GET', '/v1/device_gateway', 'bearer',                                   '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓'],
  ['DELETE', '/v1/access_tokens/current', 'bearer',                         '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓', { destructive: true }],
  ['DELETE', '/v1/access_tokens', 'bearer',                                 '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   403 ✓', { destructive: true }],
  ['DELETE', '/v1/access_tokens/{token}', 'path',                           '401 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   ✓   ✓', { destructive: true, target: 'the token of the column itself' }],
  ['POST', '/v1/access_tokens', 'bearer',                                   '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['GET', '/v1/user/access_tokens', 'bearer',                               '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['DELETE', '/v1/user/access_tokens/{id}', 'bearer',                       '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "another token of the owner's" }],

  ['GET', '/v1/user', 'bearer',                                             '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['PUT', '/v1/user', 'bearer',                                             '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { target: 'account_info' }],
  ['DELETE', '/v1/user', 'bearer',                                          '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { destructive: true, target: "with the caller's password" }],
  ['GET', '/v1/user/mfa-enable', 'bearer',                                  '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['POST', '/v1/user/mfa-enable', 'bearer',                                 '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { destructive: true, target: "the caller's own enrolment and code" }],
  ['PUT', '/v1/user/mfa-disable', 'bearer',                                 '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { destructive: true, target: "with the caller's password" }],
  ['GET', '/v1/user/security_events', 'bearer',                             '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],

  ['GET', '/v1/clients', 'bearer',                                          '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['POST', '/v1/clients', 'bearer',                                         '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['PUT', '/v1/clients/{clientId}', 'bearer',                               '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "a client of the owner's account" }],
  ['DELETE', '/v1/clients/{clientId}', 'bearer',                            '400 401 401 401 ✓   404 404 403 403 403 403 403', { destructive: true, target: "a client of the owner's account" }],
  ['GET', '/v1/products/{productIdOrSlug}/clients', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/clients', 'bearer',              '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/clients/{clientId}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['DELETE', '/v1/products/{productIdOrSlug}/clients/{clientId}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true }],

  ['POST', '/v1/user/products', 'bearer',                                   '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['GET', '/v1/user/products', 'bearer',                                    '400 401 401 401 ✓   ✓   ✓   ✓   403 403 403 ✓'],
  ['GET', '/v1/products', 'bearer',                                         '400 401 401 401 ✓   ✓   ✓   ✓   403 403 403 ✓'],
  ['GET', '/v1/products/{productIdOrSlug}', 'bearer',                       '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}', 'bearer',                       '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['DELETE', '/v1/products/{productIdOrSlug}', 'bearer',                    '400 401 401 401 ✓   403 ✓   403 403 403 403 403', { destructive: true, target: 'with `confirm=<slug>`' }],
  ['GET', '/v1/products/{productIdOrSlug}/team', 'bearer',                  '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/team', 'bearer',                 '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a signed-up user not yet in the team' }],
  ['DELETE', '/v1/products/{productIdOrSlug}/team/{username}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a third team member' }],

  ['POST', '/v1/products/{productIdOrSlug}/customers', 'bearer',            '400 401 401 401 ✓   403 ✓   ✓   403 403 ✓   403', { target: 'with a token; client credentials: test/products-customers.test.ts' }],
  ['GET', '/v1/products/{productIdOrSlug}/customers', 'bearer',             '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/customers/{email}', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a third customer' }],
  ['DELETE', '/v1/products/{productIdOrSlug}/customers/{email}', 'bearer',  '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a third customer' }],

  ['POST', '/v1/devices', 'bearer',                                         '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'provision: `{product_id}`' }],
  ['GET', '/v1/devices', 'bearer',                                          '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   403 ✓'],
  ['GET', '/v1/devices/{deviceId}', 'bearer',                               '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403', { target: "the customer's device" }],
  ['PUT', '/v1/devices/{deviceId}', 'bearer',                               '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403', { target: "the customer's device" }],
  ['DELETE', '/v1/devices/{deviceId}', 'bearer',                            '400 401 401 401 403 403 403 403 ✓   403 403 403', { destructive: true, target: "unclaim the customer's device" }],
  ['POST', '/v1/device_claims', 'bearer',                                   '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/device_claims', 'bearer',        '400 401 401 401 403 403 403 403 ✓   ✓   403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/devices', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/devices', 'bearer',              '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'import `{id}` of a fleet device' }],
  ['POST', '/v1/products/{productIdOrSlug}/device_identities', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/devices/{deviceId}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/devices/{deviceId}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['DELETE', '/v1/products/{productIdOrSlug}/devices/{deviceId}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true }],
  ['DELETE', '/v1/products/{productIdOrSlug}/devices/{deviceId}/owner', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true }],

  ['PUT', '/v1/products/{productIdOrSlug}/devices', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'the fixture\'s device added to a group' }],
  ['GET', '/v1/products/{productIdOrSlug}/firmware', 'bearer',              '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/firmware', 'bearer',             '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a new version, multipart' }],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/{version}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/firmware/{version}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'its title' }],
  ['DELETE', '/v1/products/{productIdOrSlug}/firmware/{version}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a version uploaded for the cell' }],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/{version}/binary', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/firmware/release', 'bearer',      '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'as the product default' }],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/updates', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/signing-key', 'bearer',  '400 401 401 401 404 403 404 404 403 403 403 403', { target: 'of a product that has none: allowed callers get 404' }],
  ['PUT', '/v1/products/{productIdOrSlug}/firmware/signing-key', 'bearer',  '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true }],
  ['DELETE', '/v1/products/{productIdOrSlug}/firmware/signing-key', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a key the owner set for the cell' }],
  ['GET', '/v1/products/{productIdOrSlug}/impact', 'bearer',                '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'of a release to the fleet' }],
  ['POST', '/v1/products/{productIdOrSlug}/firmware/rollouts', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a rollout of version 1 to the fleet' }],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/rollouts', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/firmware/rollouts/{id}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/pause', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a running rollout' }],
  ['POST', '/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/resume', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a paused rollout' }],
  ['POST', '/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/abort', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a running rollout' }],
  ['POST', '/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/next', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { destructive: true, target: 'a running rollout of two waves' }],
  ['GET', '/v1/products/{productIdOrSlug}/groups', 'bearer',                '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/groups', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/groups/{groupName}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/groups/{groupName}', 'bearer',    '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'its description' }],
  ['DELETE', '/v1/products/{productIdOrSlug}/groups/{groupName}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a group made for the cell' }],

  ['POST', '/v1/devices/{deviceId}/{name}', 'bearer',                       '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403', { target: "a function of the customer's connected device" }],
  ['GET', '/v1/devices/{deviceId}/{name}', 'bearer',                        '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403', { target: "a variable of the customer's connected device" }],
  ['PUT', '/v1/devices/{deviceId}/ping', 'bearer',                          '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/devices/{deviceId}/{name}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/devices/{deviceId}/{name}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['PUT', '/v1/products/{productIdOrSlug}/devices/{deviceId}/ping', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],

  ['GET', '/v1/devices/events', 'bearer',                                   '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   403 ✓', { target: "the caller's own events" }],
  ['GET', '/v1/devices/events/{prefix}', 'bearer',                          '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   403 ✓', { target: "the caller's own events" }],
  ['GET', '/v1/devices/{deviceId}/events', 'bearer',                        '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403'],
  ['GET', '/v1/devices/{deviceId}/events/{prefix}', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   ✓   403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/events', 'bearer',                '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/events/{prefix}', 'bearer',       '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/devices/{deviceId}/events', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/devices/{deviceId}/events/{prefix}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/config', 'bearer',                '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'the schema' }],
  ['GET', '/v1/products/{productIdOrSlug}/config/{deviceId}', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'the schema' }],
  ['PUT', '/v1/products/{productIdOrSlug}/config', 'bearer',                '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a schema' }],
  ['PUT', '/v1/products/{productIdOrSlug}/config/{deviceId}', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "a device's own values" }],
  ['GET', '/v1/products/{productIdOrSlug}/config/rollout', 'bearer',        '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/config/{deviceId}/explain', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/config/history', 'bearer',        '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['GET', '/v1/products/{productIdOrSlug}/config/history/{version}', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a fleet write of the owner' }],
  ['GET', '/v1/products/{productIdOrSlug}/config/history/{version}/diff', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a fleet write of the owner' }],
  ['POST', '/v1/products/{productIdOrSlug}/config/history/{version}/rollback', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a fleet write of the owner' }],
  ['DELETE', '/v1/products/{productIdOrSlug}/config', 'bearer',             '400 401 401 401 404 403 404 404 403 403 403 403', { destructive: true, target: 'restore the default schema of a product that has it: allowed callers get 404' }],
  ['POST', '/v1/devices/events', 'bearer',                                  '400 401 401 401 ✓   ✓   ✓   ✓   ✓   ✓   403 ✓', { target: "to the caller's own stream" }],
  ['POST', '/v1/products/{productIdOrSlug}/events', 'bearer',               '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],

  ['GET', '/v1/webhooks', 'bearer',                                         '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['POST', '/v1/webhooks', 'bearer',                                        '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { target: 'to a loopback receiver (WEBHOOK_ALLOW_PRIVATE)' }],
  ['POST', '/v1/webhooks/preview', 'bearer',                                '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { target: 'the request a sample event would make; nothing saved or sent' }],
  ['GET', '/v1/webhooks/{id}', 'bearer',                                    '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['PUT', '/v1/webhooks/{id}', 'bearer',                                    '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['DELETE', '/v1/webhooks/{id}', 'bearer',                                 '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "a webhook of the owner's made for the cell" }],
  ['GET', '/v1/webhooks/{id}/deliveries', 'bearer',                         '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/webhooks/{id}/deliveries/{deliveryId}/resend', 'bearer',    '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/webhooks/{id}/replay', 'bearer',                            '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/webhooks/{id}/test', 'bearer',                              '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/webhooks/{id}/secret', 'bearer',                            '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['GET', '/v1/integrations', 'bearer',                                     '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403'],
  ['POST', '/v1/integrations', 'bearer',                                    '400 401 401 401 ✓   ✓   ✓   403 403 403 403 403', { target: 'to a loopback receiver (WEBHOOK_ALLOW_PRIVATE)' }],
  ['GET', '/v1/integrations/{id}', 'bearer',                                '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['PUT', '/v1/integrations/{id}', 'bearer',                                '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['DELETE', '/v1/integrations/{id}', 'bearer',                             '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "a webhook of the owner's made for the cell" }],
  ['GET', '/v1/integrations/{id}/deliveries', 'bearer',                     '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/integrations/{id}/deliveries/{deliveryId}/resend', 'bearer', '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/integrations/{id}/replay', 'bearer',                        '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/integrations/{id}/test', 'bearer',                          '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],
  ['POST', '/v1/integrations/{id}/secret', 'bearer',                        '400 401 401 401 ✓   404 404 403 403 403 403 403', { target: "the owner's webhook" }],

  ['GET', '/v1/products/{productIdOrSlug}/webhooks', 'bearer',              '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks', 'bearer',             '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'to a loopback receiver (WEBHOOK_ALLOW_PRIVATE)' }],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks/preview', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'the request a sample event would make; nothing saved or sent' }],
  ['GET', '/v1/products/{productIdOrSlug}/webhooks/{id}', 'bearer',         '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['PUT', '/v1/products/{productIdOrSlug}/webhooks/{id}', 'bearer',         '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['DELETE', '/v1/products/{productIdOrSlug}/webhooks/{id}', 'bearer',      '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a product webhook made for the cell' }],
  ['GET', '/v1/products/{productIdOrSlug}/webhooks/{id}/deliveries', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks/{id}/deliveries/{deliveryId}/resend', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks/{id}/replay', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks/{id}/test', 'bearer',   '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/webhooks/{id}/secret', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['GET', '/v1/products/{productIdOrSlug}/integrations', 'bearer',          '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403'],
  ['POST', '/v1/products/{productIdOrSlug}/integrations', 'bearer',         '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'to a loopback receiver (WEBHOOK_ALLOW_PRIVATE)' }],
  ['GET', '/v1/products/{productIdOrSlug}/integrations/{id}', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['PUT', '/v1/products/{productIdOrSlug}/integrations/{id}', 'bearer',     '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['DELETE', '/v1/products/{productIdOrSlug}/integrations/{id}', 'bearer',  '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: 'a product webhook made for the cell' }],
  ['GET', '/v1/products/{productIdOrSlug}/integrations/{id}/deliveries', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/integrations/{id}/deliveries/{deliveryId}/resend', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/integrations/{id}/replay', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/integrations/{id}/test', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
  ['POST', '/v1/products/{productIdOrSlug}/integrations/{id}/secret', 'bearer', '400 401 401 401 ✓   403 ✓   ✓   403 403 403 403', { target: "the product's webhook" }],
];

export const MATRIX: readonly RouteRule[] = ROWS.map(([method, path, place, row, extra]) => ({ method, path, place, ...extra, expect: cells(row) }));

export const routeKey = (r: { method: string; path: string }): string => `${r.method.toUpperCase()} ${r.path}`;

const PLACE_NOTE: Record<CredentialPlace, string> = { bearer: '', path: ' ¹', client: ' ²', public: '' };

const cellText = (o: Outcome): string => (o === 'ok' ? '✓' : String(o));

/** The generated part of docs/security.md, between the matrix markers (markers excluded). */
export function renderMatrix(): string {
  const header = `| route | ${CREDENTIALS.map((c) => c.label).join(' | ')} |`;
  const rule = `|---|${CREDENTIALS.map(() => ':-:').join('|')}|`;
  const rows = MATRIX.map((r) => {
    const target = r.target ? ` (${r.target})` : '';
    return `| \`${r.method} ${r.path}\`${PLACE_NOTE[r.place]}${target} | ${CREDENTIALS.map((c) => cellText(r.expect[c.id])).join(' | ')} |`;
  });
  const legend = CREDENTIALS.map((c) => `- **${c.label}**: ${c.description}.`);
  return [
    '<!-- Generated from test/authorization-matrix.table.ts by `npm run docs:matrix`; do not edit by hand. -->',
    '',
    'Every route of the API against every kind of credential, as test/authorization-matrix.test.ts',
    'checks it on both stores: ✓ is a 2xx answer; a number is the exact refusal (400: no token, or',
    'not a credential this route takes; 401: the token is unknown, expired or revoked; 403: the',
    "token's kind, scope or team does not allow it; 404: the resource is hidden from the caller).",
    'Requests point at the fixture\'s product, device, client and customer; unknown and foreign',
    'products and devices answer alike, so a 403 tells nothing about what exists.',
    '',
    'Credentials (columns):',
    '',
    ...legend,
    '',
    header,
    rule,
    ...rows,
    '',
    '¹ The token in the path is the credential; a column\'s token is put there (for "none", a token',
    'nobody was issued). A token may always revoke itself, whatever its scope.',
    '',
    '² The OAuth client authenticates (HTTP Basic or client_id/client_secret); an access token is',
    'not a credential there and a Bearer header is ignored, so every column answers 400',
    '`invalid_client`. Client rules: test/oauth-token.test.ts, test/products-customers.test.ts.',
  ].join('\n');
}

export const MATRIX_START = '<!-- matrix:start -->';
export const MATRIX_END = '<!-- matrix:end -->';

/** The whole document with its matrix section replaced (or appended when it has none). */
export function withMatrix(doc: string): string {
  const block = `${MATRIX_START}\n${renderMatrix()}\n${MATRIX_END}`;
  const start = doc.indexOf(MATRIX_START);
  const end = doc.indexOf(MATRIX_END);
  if (start >= 0 && end > start) return doc.slice(0, start) + block + doc.slice(end + MATRIX_END.length);
  return `${doc.replace(/\n*$/, '\n')}\n## Authorization matrix\n\n${block}\n`;
}

/** The text between the markers of a document, or undefined. */
export function matrixOf(doc: string): string | undefined {
  const start = doc.indexOf(MATRIX_START);
  const end = doc.indexOf(MATRIX_END);
  if (start < 0 || end <= start) return undefined;
  return doc.slice(start + MATRIX_START.length, end).replace(/^\n/, '').replace(/\n$/, '');
}
