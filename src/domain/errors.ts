/**
 * The error catalogue: every error the API can answer with, by stable code.
 *
 * `code` is what clients match on and never changes; `wire` is the value placed in the
 * `error` field where Particle's wire format fixes a different text
 * (docs/particle-compatibility.md#error-bodies).
 * docs/errors.md lists every code; test/unit/errors-catalogue.test.ts fails when one is missing.
 */
export interface ErrorSpec {
  readonly status: number;
  readonly summary: string;
  /** Text of the `error` field when it is not the code itself. */
  readonly wire?: string;
}

export const ERRORS = {
  // RFC 6749 §5.2, with the statuses of Particle's token server
  // (docs/particle-compatibility.md#token-endpoint-errors)
  invalid_request: { status: 400, summary: 'The request is malformed: a parameter is missing, repeated, of the wrong type or too long.' },
  invalid_client: { status: 400, summary: 'Client authentication failed: unknown client, wrong secret, or no credentials.' },
  invalid_grant: { status: 400, summary: 'The credentials of the grant (password, refresh token, one-time password) are invalid or expired.' },
  unauthorized_client: { status: 400, summary: 'The client may not use this grant type or endpoint.' },
  unsupported_grant_type: { status: 400, summary: 'The grant_type is not one the server supports.' },
  invalid_scope: { status: 400, summary: 'The requested scope is unknown or wider than the client allows.' },
  // RFC 6750 §3.1
  invalid_token: { status: 401, summary: 'The access token is unknown, expired or revoked.' },
  insufficient_scope: { status: 403, summary: 'The access token is valid but its scope does not allow this request.' },
  mfa_required: { status: 403, summary: 'The account has multi-factor authentication on: complete the login with the one-time password grant and the mfa_token.' },
  // Resources
  forbidden: { status: 403, summary: 'The caller may not do this.' },
  permission_denied: { status: 403, wire: 'Permission Denied', summary: 'Unknown device, or a device the caller may not reach (Particle answers the same for both).' },
  device_claimed_by_other: { status: 403, wire: 'That belongs to someone else.', summary: 'The device is owned by another account or customer; it must be released first.' },
  signup_closed: { status: 403, summary: 'Open sign-up is switched off on this server (SIGNUP=off).' },
  not_found: { status: 404, summary: 'No such resource, or none the caller may see.' },
  username_taken: { status: 409, summary: 'An account with this username already exists.' },
  conflict: { status: 409, summary: 'The request conflicts with the current state of the resource.' },
  claim_code_invalid: { status: 400, summary: 'The claim code is unknown, already used, expired, or for another product.' },
  // Devices (docs/device-protocol.md; docs/particle-compatibility.md#call-errors)
  device_offline: { status: 404, summary: 'The device is not connected to the cloud now; calls, reads and signals need a connected device.' },
  function_not_found: { status: 404, wire: 'Function not found', summary: 'The device has not declared a function by that name.' },
  variable_not_found: { status: 404, wire: 'Variable not found', summary: 'The device has not declared a variable by that name.' },
  device_timeout: { status: 408, wire: 'Timed out.', summary: 'The device did not answer within the timeout (DEVICE_CALL_TIMEOUT_SECONDS or the call\'s `timeout`).' },
  device_error: { status: 400, summary: 'The device answered the call or read with an error of its own; error_description carries its message.' },
  // Configuration (docs/particle-compatibility.md#product-configuration)
  invalid_schema: { status: 422, wire: 'Invalid Schema', summary: 'The configuration schema was refused; `violations` lists each problem with a JSON pointer.' },
  device_rejected_configuration: { status: 400, summary: 'The connected device refused part of the configuration; `results` gives each module with its status and the device\'s code.' },
  invalid_configuration: { status: 400, summary: 'Configuration values were refused (types, bounds, unknown modules or keys, scope rules, or a module too large for a device); `violations` lists each with a JSON pointer, and nothing was changed.' },
  // Product firmware (docs/firmware.md)
  invalid_firmware: { status: 400, summary: 'The firmware binary was refused: not a module, its CRC-32 does not hold, not application firmware, or its platform, product id or product version is not the product\'s or the one given; `reason` names the check.' },
  invalid_signature: { status: 400, summary: 'The product has a firmware signing key and the image\'s signature is missing, malformed, or not verified by the key; or the key itself is not an Ed25519 public key.' },
  firmware_in_use: { status: 409, summary: 'The firmware version cannot be deleted: it has been released, or devices are locked to it.' },
  payload_too_large: { status: 413, summary: 'The request body is larger than the server accepts.' },
  unsupported_media_type: { status: 415, summary: 'The Content-Type is not one this endpoint accepts.' },
  // Cluster roles (docs/operations.md, "Roles")
  misdirected_request: { status: 421, summary: 'This node runs with --role gateway and does not serve the REST API (only GET /healthz and GET /metrics); send the request to a node with role all or api.' },
  rate_limit_exceeded: { status: 429, summary: 'Too many requests or failed attempts; retry after the number of seconds in Retry-After.' },
  server_error: { status: 500, summary: 'An unexpected failure; the body carries only a request id to quote when reporting it.' },
  service_unavailable: { status: 503, summary: 'The server is starting or shutting down, or storage (or, in a cluster, NATS) is unreachable.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Extra public fields some errors carry (mfa_token, info, errors, violations...). */
export type ErrorDetails = Record<string, unknown>;

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  /** Seconds the client should wait (sent as Retry-After). */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetails; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DomainError';
    this.code = code;
    this.details = options.details ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}

export function isDomainError(value: unknown): value is DomainError {
  return value instanceof DomainError;
}
