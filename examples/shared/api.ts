/**
 * The few lines of `fetch` the examples use to call Skyport's REST API (docs/api.md). Every
 * request is spelled out at its call site: method, path, credentials, body.
 */

/** A refusal of the API: the HTTP status and the JSON body (`{error, error_description}`). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly body: Record<string, unknown>, what: string) {
    super(`${what}: ${status} ${String(body.error ?? '')}${body.error_description ? ` (${String(body.error_description)})` : ''}`);
    this.name = 'ApiError';
  }

  /** The `error` field of the answer, e.g. `invalid_token` or `Permission Denied`. */
  get error(): string | undefined {
    return typeof this.body.error === 'string' ? this.body.error : undefined;
  }
}

export interface Request {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** An access token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** OAuth client credentials, sent as HTTP Basic (`client_id:client_secret`). */
  client?: { id: string; secret: string };
  /** A form-encoded body (what `/oauth/token` and the customer route take). */
  form?: Record<string, string>;
  /** A JSON body. */
  json?: unknown;
}

/** HTTP Basic with the client ID as user name and the secret as password (RFC 6749 §2.3.1). */
export function basicAuth(client: { id: string; secret: string }): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`;
}

/** Sends one request to `apiUrl + path`; resolves to the JSON answer, throws ApiError on 4xx/5xx. */
export async function api<T>(apiUrl: string, path: string, req: Request = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  let body: string | undefined;
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  if (req.client !== undefined) headers.authorization = basicAuth(req.client);
  if (req.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(req.form).toString();
  } else if (req.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(req.json);
  }
  const method = req.method ?? (body === undefined ? 'GET' : 'POST');
  const res = await fetch(`${apiUrl.replace(/\/+$/, '')}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? {} : JSON.parse(text);
  } catch {
    parsed = { error: text.slice(0, 200) };
  }
  if (!res.ok) throw new ApiError(res.status, (parsed ?? {}) as Record<string, unknown>, `${method} ${path}`);
  return parsed as T;
}

/** The answer of `POST /oauth/token` and of `POST /v1/products/:p/customers`. */
export interface TokenResponse {
  token_type: 'bearer';
  access_token: string;
  expires_in: number;
  refresh_token?: string;
  scope?: string;
}

/** `POST /v1/devices/:id/:function` and its product form answer this. */
export interface FunctionResult { id: string; connected: boolean; return_value: number }

/** `GET /v1/devices/:id/:variable` answers this. */
export interface VariableResult { name: string; result: number | string | boolean }
