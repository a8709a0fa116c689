/** Raw HTTP for the tests that send what no client library would. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function raw(url: string, init: RequestInit & { form?: Record<string, string>; json?: unknown; token?: string } = {}): Promise<RawResponse> {
  const headers = new Headers(init.headers);
  let body = init.body;
  if (init.form) {
    headers.set('content-type', 'application/x-www-form-urlencoded');
    body = new URLSearchParams(init.form).toString();
  } else if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  const controller = new AbortController();
  const res = await fetch(url, { ...init, headers, body: body ?? null, signal: init.signal ?? controller.signal });
  // An event stream never ends: take what arrived first (`:ok`) and hang up.
  const streaming = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const text = streaming ? await firstChunk(res, controller) : await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

async function firstChunk(res: Response, controller: AbortController): Promise<string> {
  const reader = res.body!.getReader();
  const { value } = await reader.read();
  controller.abort();
  await reader.cancel().catch(() => undefined);
  return new TextDecoder().decode(value);
}
