import type { FastifyInstance } from 'fastify';
import { Agent } from 'undici';

/** Raw HTTP for the tests that send what no client library would. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface RawInit extends RequestInit {
  form?: Record<string, string>;
  json?: unknown;
  token?: string;
  /** Over a real socket even to a server of this process (a test about the network itself). */
  network?: boolean;
  /**
   * The client's address: inject's `remoteAddress` in process; over the network, the local
   * address the socket binds to (a loopback address such as 127.0.0.2).
   */
  from?: string;
}

/**
 * Servers of this process by origin (startTestServer registers each): a request to one goes
 * through Fastify's inject, with no socket, unless it opens an event stream, which never ends
 * and so must be read over the network.
 */
const inProcess = new Map<string, FastifyInstance>();

export function serveInProcess(origin: string, app: FastifyInstance): () => void {
  inProcess.set(origin, app);
  return () => inProcess.delete(origin);
}

const EVENT_STREAM = /\/events(\/|$)/;

export async function raw(url: string, init: RawInit = {}): Promise<RawResponse> {
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
  const target = new URL(url);
  const app = inProcess.get(target.origin);
  const method = (init.method ?? 'GET').toUpperCase();
  const response = app && !init.network && !(method === 'GET' && EVENT_STREAM.test(target.pathname))
    ? await injected(app, target, new Request(url, { method, headers, body: body ?? null }), init.from)
    : await overNetwork(url, { ...init, headers, body: body ?? null, ...(init.from ? { dispatcher: fromAddress(init.from) } : {}) });
  let json: unknown;
  try {
    json = response.text === '' ? undefined : JSON.parse(response.text);
  } catch {
    json = undefined;
  }
  return { ...response, json };
}

/** The request as fetch would have sent it (its body encoded, its Host), handed to Fastify. */
async function injected(app: FastifyInstance, target: URL, request: Request, from: string | undefined): Promise<Omit<RawResponse, 'json'>> {
  const headers: Record<string, string> = { host: target.host, ...Object.fromEntries(request.headers) };
  const payload = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const res = await app.inject({ method: request.method as 'GET', url: target.pathname + target.search, headers, ...(payload ? { payload } : {}), ...(from ? { remoteAddress: from } : {}) });
  const answered = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) answered.append(name, String(v));
  }
  return { status: res.statusCode, headers: answered, text: res.body };
}

async function overNetwork(url: string, init: RequestInit): Promise<Omit<RawResponse, 'json'>> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: init.signal ?? controller.signal });
  // An event stream never ends: take what arrived first (`:ok`) and hang up.
  const streaming = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const text = streaming ? await firstChunk(res, controller) : await res.text();
  return { status: res.status, headers: res.headers, text };
}

const agents = new Map<string, Agent>();

/** A dispatcher for fetch whose sockets bind to `address` (loopback addresses other than 127.0.0.1 need no set-up on Linux). */
export function fromAddress(address: string): Agent {
  let agent = agents.get(address);
  if (!agent) agents.set(address, (agent = new Agent({ localAddress: address })));
  return agent;
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
