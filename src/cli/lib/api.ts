/**
 * The REST client of the CLI: JSON in and out, the token as a Bearer header, and every error
 * turned into one line that says what the cloud said (docs/errors.md).
 */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: unknown) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  form?: Record<string, string>;
  /** A raw body, with its content type in `headers`. */
  body?: string | FormData;
  headers?: Record<string, string>;
  /** Send no token (the token endpoint, sign-up). */
  anonymous?: boolean;
}

export interface Api {
  readonly baseUrl: string;
  readonly token: string | undefined;
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** The raw response, for streams (Server-Sent Events) and non-JSON answers. */
  fetch(method: string, path: string, options?: RequestOptions & { signal?: AbortSignal }): Promise<Response>;
}

/** One line from an error body: `error: description`, and the first violations if any. */
export function describeError(status: number, body: unknown): { code: string; message: string } {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const code = typeof b.error === 'string' ? b.error : `HTTP ${status}`;
  const description = [b.error_description, b.description, b.info, b.message].find((v) => typeof v === 'string' && v !== code) as string | undefined;
  let message = description ? `${code}: ${description}` : code;
  if (Array.isArray(b.violations) && b.violations.length > 0) {
    const shown = (b.violations as Array<{ path?: string; message?: string }>).slice(0, 3).map((v) => `${v.path || '/'} ${v.message ?? ''}`.trim());
    message += ` (${shown.join('; ')}${b.violations.length > 3 ? `; ${b.violations.length - 3} more` : ''})`;
  }
  return { code, message: `${message} [${status}]` };
}

/** An answer's body: its JSON, or its text when it is not JSON; undefined when empty. */
function bodyOf(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The error of an answer that is not a success (for callers of `fetch`, which reads answers itself). */
export async function refusalOf(res: Response): Promise<ApiError> {
  const body = bodyOf(await res.text());
  const { code, message } = describeError(res.status, body);
  return new ApiError(res.status, code, message, body);
}

export function createApi(baseUrl: string, token: string | undefined): Api {
  const root = baseUrl.replace(/\/+$/, '');

  function build(path: string, o: RequestOptions): { url: string; init: RequestInit } {
    const url = new URL(`${root}${path}`);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (!o.anonymous && token) headers.authorization = `Bearer ${token}`;
    let body: string | FormData | undefined = o.body;
    if (o.json !== undefined) { body = JSON.stringify(o.json); headers['content-type'] = 'application/json'; }
    if (o.form) { body = new URLSearchParams(o.form).toString(); headers['content-type'] = 'application/x-www-form-urlencoded'; }
    return { url: url.toString(), init: { headers, body } };
  }

  async function send(method: string, path: string, o: RequestOptions & { signal?: AbortSignal } = {}): Promise<Response> {
    const { url, init } = build(path, o);
    try {
      return await fetch(url, { ...init, method, signal: o.signal });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new Error(`cannot reach ${root}${cause ? ` (${cause})` : ''}; is the cloud running, and is --api-url right?`);
    }
  }

  return {
    baseUrl: root,
    token,
    fetch: send,
    async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
      const res = await send(method, path, o);
      if (!res.ok) throw await refusalOf(res);
      return bodyOf(await res.text()) as T;
    },
  };
}
