import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { hostOfUrl, type DestinationCheck } from './destinations.js';
import type { OutgoingRequest } from './request.js';

/** Particle's time-out for a webhook's answer. */
export const TIMEOUT_MS = 20_000;
/** How much of an answer is read: enough for a response template and the log's excerpt. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** How one attempt went. `status` is absent when no answer came (refused, timed out, not allowed). */
export interface AttemptResult {
  status: number | null;
  latencyMs: number;
  /** The answer's body (at most MAX_ANSWER_BYTES), as text. */
  body: string;
  retryAfter: string | undefined;
  error: string | null;
  /** The destination was refused before connecting: not worth retrying until the webhook changes. */
  refused: boolean;
}

interface Target { origin: string; path: string; refused: string | null }

/** A header's value among undici's raw headers (name, value, name, value, …), by its name in lower case. */
function headerValue(raw: Buffer[] | string[] | null, name: string): string | undefined {
  if (!raw) return undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i] as Buffer | string;
    if (key.length === name.length && key.toString().toLowerCase() === name) return (raw[i + 1] as Buffer | string).toString();
  }
  return undefined;
}

class RefusedDestination extends Error {
  readonly code = 'EWEBHOOKDESTINATION';
}

/**
 * Resolves as the system does, then refuses the connection when an address the name resolves to
 * is not allowed: checked at every connection, so a name that resolved to a public address when
 * the webhook was saved cannot be pointed at this machine later.
 */
function guardedLookup(check: DestinationCheck): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      for (const a of addresses) {
        const refused = check(a.address);
        if (refused) return callback(new RefusedDestination(`${hostname} resolves to ${refused}`));
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      return first ? callback(null, first.address, first.family) : callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
    });
  }) as LookupFunction;
}

/**
 * Sends deliveries with undici: keep-alive connections per host (bounded), no redirects followed,
 * answers read up to a bound, a 20 s time-out for the whole exchange.
 */
export function createSender(options: { check: DestinationCheck; connectionsPerHost?: number; timeoutMs?: number }) {
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  const connect = (rejectUnauthorized: boolean) => ({ lookup: guardedLookup(options.check), rejectUnauthorized, timeout: 10_000 });
  const agents = {
    verified: new Agent({ connections: options.connectionsPerHost ?? 16, connect: connect(true), headersTimeout: timeoutMs, bodyTimeout: timeoutMs }),
    unverified: new Agent({ connections: options.connectionsPerHost ?? 16, connect: connect(false), headersTimeout: timeoutMs, bodyTimeout: timeoutMs }),
  };

  /**
   * Where a URL goes (undici's origin and path), and, for an address in the URL itself, which is
   * connected to without a lookup, whether it is refused. Kept per URL (parsing the URL and
   * checking the address cost about 6 µs, a few per cent of a delivery's CPU), in a table emptied
   * when it fills, since templated URLs may differ per event.
   */
  const targets = new Map<string, Target>();
  const targetOf = (url: string): Target => {
    let target = targets.get(url);
    if (target === undefined) {
      const parsed = new URL(url);
      const host = hostOfUrl(parsed);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}`, refused: isIP(host) ? options.check(host) : null };
      if (targets.size >= 1000) targets.clear();
      targets.set(url, target);
    }
    return target;
  };

  /**
   * One exchange through undici's dispatcher, its answer gathered by a handler of our own: the
   * `request` API wraps every answer in a stream read through an async iterator, which cost more
   * CPU than the rest of the exchange (docs/benchmarks.md, "Webhooks").
   */
  function send(r: OutgoingRequest, rejectUnauthorized: boolean): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failed = (error: string, refused = false): AttemptResult => ({ status: null, latencyMs: elapsed(), body: '', retryAfter: undefined, error, refused });
    let target: Target;
    try {
      target = targetOf(r.url);
    } catch {
      return Promise.resolve(failed('the request is invalid: the URL does not parse', true));
    }
    if (target.refused) return Promise.resolve(failed(target.refused, true));
    const dispatcher = rejectUnauthorized ? agents.verified : agents.unverified;
    return new Promise<AttemptResult>((resolve) => {
      let abort: ((err: Error) => void) | null = null;
      let deadlinePassed: Error | null = null;
      let settled = false;
      let status = 0;
      let retryAfter: string | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const answered = () => finish({ status, latencyMs: elapsed(), body: Buffer.concat(chunks).toString('utf8'), retryAfter, error: null, refused: false });
      // One deadline for the whole exchange: waiting for a connection, the answer's head and its
      // body (a receiver that sends its answer a byte at a time is cut off too).
      const timer = setTimeout(() => {
        const err = Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { name: 'AbortError' });
        if (abort) abort(err);
        else deadlinePassed = err;
      }, timeoutMs).unref();
      try {
        dispatcher.dispatch({ origin: target.origin, path: target.path, method: r.method as Dispatcher.HttpMethod, headers: r.headers, body: r.body === '' ? null : r.body }, {
          onConnect(cancel) {
            // The deadline passed while the request waited for a connection: it goes no further.
            if (deadlinePassed) cancel(deadlinePassed);
            else abort = cancel;
          },
          onHeaders(statusCode, headers) {
            status = statusCode;
            retryAfter = headerValue(headers, 'retry-after');
            return true;
          },
          onData(chunk) {
            chunks.push(size + chunk.length > MAX_ANSWER_BYTES ? chunk.subarray(0, MAX_ANSWER_BYTES - size) : chunk);
            size += chunk.length;
            if (size < MAX_ANSWER_BYTES) return true;
            // Enough for the log and a response template: the answer is taken as it is, the rest is not read.
            answered();
            abort?.(new Error('answer read up to its bound'));
            return false;
          },
          onComplete: answered,
          onError(err) {
            finish(failed(...describe(err, timeoutMs)));
          },
        });
      } catch (err) {
        finish(failed(...describe(err, timeoutMs)));
      }
    });
  }

  return {
    send,
    async close(): Promise<void> {
      await Promise.all([agents.verified.close(), agents.unverified.close()]);
    },
  };
}

export type Sender = ReturnType<typeof createSender>;

/** A failure in words for the log and `hook-error`, never with the request's secrets in it. */
function describe(err: unknown, timeoutMs: number): [string, boolean] {
  const e = err as Error & { code?: string; cause?: Error & { code?: string } };
  const cause = e.cause ?? e;
  if (cause instanceof RefusedDestination) return [cause.message, true];
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || cause.code === 'UND_ERR_HEADERS_TIMEOUT' || cause.code === 'UND_ERR_BODY_TIMEOUT') return [`no answer within ${timeoutMs / 1000} s`, false];
  if (cause.code === 'ECONNREFUSED') return ['connection refused', false];
  if (cause.code === 'ENOTFOUND' || cause.code === 'EAI_AGAIN') return ['the host name does not resolve', false];
  if (cause.code === 'ECONNRESET' || cause.code === 'UND_ERR_SOCKET') return ['the connection was closed before an answer', false];
  if (cause.code?.startsWith('ERR_TLS') || /certificate|self.signed/i.test(cause.message)) return [`TLS: ${cause.message}`, false];
  if (cause.code === 'UND_ERR_INVALID_ARG' || cause.code === 'ERR_INVALID_CHAR') return [`the request is invalid: ${cause.message}`, true];
  return [cause.message || 'the request failed', false];
}
