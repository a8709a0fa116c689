import { ERRORS, type ErrorCode } from '../../../src/domain/errors.js';

/**
 * An API call that failed, in words a person reads: the server's own description, or the summary
 * of its code in the error catalogue (docs/errors.md) when it says less. `status` 0 and code
 * `network`: the cloud was not reached. `body` is the error's JSON (violations, an MFA token…).
 */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: Record<string, unknown>) {
    super(message);
  }
}

/** What a person reads for an error: the server's description, or the catalogue's summary. */
export function describe(code: string, description: unknown): string {
  if (typeof description === 'string' && description !== '') return description;
  return code in ERRORS ? ERRORS[code as ErrorCode].summary : 'The request failed.';
}

/** The error of an answer that is not a success; `body` is its parsed JSON, or whatever else came. */
export function errorOf(status: number, body: unknown): ApiError {
  const parsed = body !== null && typeof body === 'object' && !Array.isArray(body) ? body as Record<string, unknown> : {};
  const code = typeof parsed.error === 'string' ? parsed.error : `http_${status}`;
  return new ApiError(status, code, describe(code, parsed.error_description), parsed);
}

export const unreachable = (): ApiError => new ApiError(0, 'network', 'The cloud could not be reached. Check the connection and try again.', {});
