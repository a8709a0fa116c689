import { lookup as dnsLookup } from 'node:dns';
import { EventEmitter } from 'node:events';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { hostOf, type DestinationCheck } from './destinations.js';
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
   * An address in the URL itself is connected to without a lookup: checked here. The answer is
   * kept per URL (parsing the URL and checking the address cost about 6 µs, a few per cent of a
   * delivery's CPU), in a table emptied when it fills, since templated URLs may differ per event.
   */
  const literals = new Map<string, string | null>();
  const literalRefusal = (url: string): string | null => {
    let refused = literals.get(url);
    if (refused === undefined) {
      const host = hostOf(url);
      refused = isIP(host) ? options.check(host) : null;
      if (literals.size >= 1000) literals.clear();
      literals.set(url, refused);
    }
    return refused;
  };

  async function send(r: OutgoingRequest, rejectUnauthorized: boolean): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failed = (error: string, refused = false): AttemptResult => ({ status: null, latencyMs: elapsed(), body: '', retryAfter: undefined, error, refused });
    const refused = literalRefusal(r.url);
    if (refused) return failed(refused, true);
    // One deadline for the whole exchange: connecting, the answer's head and its body (a receiver
    // that sends its answer a byte at a time is cut off too). undici takes an EventEmitter as the
    // request's signal as well as an AbortSignal: an AbortSignal (AbortSignal.timeout) cost about
    // 50 µs of CPU per request in undici 6 on Node 20, half of what the rest of a request costs
    // (docs/benchmarks.md, "Webhooks"), where an emitter and a timer cost a few.
    const deadline = new EventEmitter();
    const timer = setTimeout(() => deadline.emit('abort'), timeoutMs).unref();
    try {
      const res = await request(r.url, {
        method: r.method,
        headers: r.headers,
        body: r.body === '' ? null : r.body,
        dispatcher: rejectUnauthorized ? agents.verified : agents.unverified,
        signal: deadline,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        const b = chunk as Buffer;
        chunks.push(size + b.length > MAX_ANSWER_BYTES ? b.subarray(0, MAX_ANSWER_BYTES - size) : b);
        size += b.length;
        if (size >= MAX_ANSWER_BYTES) {
          res.body.destroy();
          break;
        }
      }
      const retryAfter = res.headers['retry-after'];
      return {
        status: res.statusCode, latencyMs: elapsed(), body: Buffer.concat(chunks).toString('utf8'),
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, error: null, refused: false,
      };
    } catch (err) {
      return failed(...describe(err, timeoutMs));
    } finally {
      clearTimeout(timer);
    }
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
