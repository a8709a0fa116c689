import { ERRORS, type ErrorCode } from '../../src/domain/errors.js';

/**
 * The console's only way to the cloud: the public REST API of its own origin, as a user's own
 * code would call it (docs/api.md). Errors come back as ApiError, in words from the error
 * catalogue (docs/errors.md) when the server's own description says less.
 */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: Record<string, unknown>) {
    super(message);
  }
}

export interface Request {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  token?: string | null;
  json?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** What a person reads for an error: the server's description, or the catalogue's summary. */
export function describe(code: string, description: unknown): string {
  if (typeof description === 'string' && description !== '') return description;
  return code in ERRORS ? ERRORS[code as ErrorCode].summary : 'The request failed.';
}

export async function api<T = Record<string, unknown>>(path: string, r: Request = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...r.headers };
  let body: string | undefined;
  if (r.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(r.form).toString();
  } else if (r.json !== undefined) {
    // A schema upload says so by its own content type (application/schema+json).
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(r.json);
  }
  if (r.token) headers.authorization = `Bearer ${r.token}`;
  let res: Response;
  try {
    res = await fetch(path, { method: r.method ?? 'GET', headers, body });
  } catch {
    throw new ApiError(0, 'network', 'The cloud could not be reached. Check the connection and try again.', {});
  }
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    // Not JSON (a proxy's error page): described by its status alone.
  }
  if (!res.ok) {
    const code = typeof parsed.error === 'string' ? parsed.error : `http_${res.status}`;
    throw new ApiError(res.status, code, describe(code, parsed.error_description), parsed);
  }
  return parsed as T;
}
