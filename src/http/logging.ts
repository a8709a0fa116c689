import type { FastifyBaseLogger, FastifyInstance, FastifyServerOptions } from 'fastify';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { Settings } from '../config/settings.js';

/**
 * Log options: JSON lines (pino) with the request id on every line, and no secret in any of
 * them. Tokens travel in headers, in the `access_token` query parameter and in the path of
 * DELETE /v1/access_tokens/:token, so URLs are scrubbed as well as headers.
 */
export function redactUrl(url: string): string {
  // Most paths have no query, no escape and no token in them: nothing to scrub.
  if (!MAY_HOLD_SECRET.test(url)) return url;
  const q = url.indexOf('?');
  // The router and the query parser decode percent-escapes (`access%5Ftoken=` is
  // `access_token=`, `/v1/access%5Ftokens/…` reaches the revoke route), so names are compared
  // decoded and in any letter case.
  let afterAccessTokens = false;
  const path = (q < 0 ? url : url.slice(0, q)).split('/').map((segment) => {
    const name = decoded(segment).toLowerCase();
    if (afterAccessTokens && segment !== '' && name !== 'current') return '[redacted]';
    if (name === 'access_tokens') afterAccessTokens = true;
    return segment;
  }).join('/');
  if (q < 0) return path;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0 || !SECRET_PARAMS.has(decoded(pair.slice(0, eq)).toLowerCase())) return pair;
    return `${pair.slice(0, eq)}=[redacted]`;
  }).join('&');
  return `${path}?${query}`;
}

/** What every URL that redactUrl could change holds: a query, an escape, or the tokens' path. */
const MAY_HOLD_SECRET = /[?%]|access_tokens/i;

const SECRET_PARAMS = new Set(['access_token', 'client_secret', 'password', 'refresh_token', 'mfa_token', 'otp', 'recovery_code', 'token']);

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * One line per request, once its answer has gone (Fastify's own are two, "incoming request" and
 * "request completed", each through the request's child logger, which redaction makes dear to
 * create): the method, the route's pattern, the path (scrubbed), the status, the time and the
 * request id.
 *
 * The line is written by a logger of its own on the root logger's stream, without the root's
 * redaction: every field of it is known and none is secret (the path goes through redactUrl), and
 * redaction, which walks each line for the paths it knows, was half of the line's cost
 * (docs/benchmarks.md, "Token issuance and authenticated reads"). The stream is the root's
 * (logDestination: 4 KB blocks, flushed at exit), so writing stays off the request's path.
 */
export function logRequests(app: FastifyInstance): void {
  const root = app.log as unknown as Logger;
  const stream = (root as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as DestinationStream | undefined;
  // Tests may build the app with no logger (Fastify's abstract one has no stream): nothing to write.
  if (!stream || typeof root.isLevelEnabled !== 'function') return;
  const lines = pino({ level: 'info' }, stream);
  app.addHook('onResponse', (req, reply, done) => {
    if (root.isLevelEnabled('info')) {
      lines.info({
        reqId: req.id, method: req.method, route: req.routeOptions.url ?? null, url: redactUrl(req.url),
        status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, ip: req.ip,
      }, 'request');
    }
    done();
  });
}

/**
 * Lines are written to standard output in blocks of about 4 KB, or once a second when fewer come:
 * written one by one, each request's line cost a write of its own (a system call on libuv's
 * thread pool, and the hand-over to it), about a fifth of a read's CPU at `info`
 * (docs/benchmarks.md). What is buffered is written at exit, and on a fatal error (pino flushes
 * its destination on `exit`); a process killed with SIGKILL loses at most the last second.
 *
 * The block is gathered as buffers, one per line (sonic-boom's `buffer` mode), not as text:
 * sonic-boom appends text to its block with `+=` and measures the block's UTF-8 length at each
 * line, which copies the block every time, about 4 µs a line against 0.5 for a buffer per line
 * (bench/log-destination.ts). pino writes text, so each line becomes a buffer on its way in.
 */
export function logDestination(dest: number | string = 1): DestinationStream {
  const stream = pino.destination({ dest, minLength: 4096, periodicFlush: 1000, sync: false, contentMode: 'buffer' });
  const writeBuffer = stream.write.bind(stream) as unknown as (data: Buffer) => boolean;
  stream.write = (line: string | Buffer) => writeBuffer(typeof line === 'string' ? Buffer.from(line) : line);
  return stream;
}

export function loggerOptions(settings: Pick<Settings, 'logLevel'>, stream: DestinationStream = logDestination()): FastifyServerOptions['logger'] {
  return {
    level: settings.logLevel,
    stream,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'password', 'client_secret', 'access_token', 'refresh_token', 'secret', '*.password', '*.client_secret', '*.access_token', '*.refresh_token', '*.secret'],
      censor: '[redacted]',
    },
    serializers: {
      req(req: { method: string; url: string; ip?: string; headers: Record<string, unknown> }) {
        return { method: req.method, url: redactUrl(req.url), remoteAddress: req.ip, userAgent: req.headers['user-agent'] };
      },
    },
  };
}

type LogMethod = (...args: unknown[]) => void;
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
/** pino's level numbers; an unknown (custom) level writes, so no line is lost. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * Fastify gives every request a child logger bound to its request id. With redaction on, pino's
 * child() is not free: it serialises and redacts the bindings (docs/benchmarks.md,
 * "Measurements behind design choices"), while at `warn` most requests never write a line. This
 * child is made on the first line that is written.
 */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = function (logger, bindings, opts) {
  // A route's own log level or serializers change the child itself: make it at once.
  if (opts.level !== undefined || opts.serializers !== undefined) return logger.child(bindings, opts);
  return new LazyChild(logger, bindings) as unknown as FastifyBaseLogger;
};

class LazyChild {
  private made: FastifyBaseLogger | undefined;

  constructor(private readonly parent: FastifyBaseLogger, private readonly bindings: Record<string, unknown>) {}

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void { this.write('fatal', args); }
  error(...args: unknown[]): void { this.write('error', args); }
  warn(...args: unknown[]): void { this.write('warn', args); }
  info(...args: unknown[]): void { this.write('info', args); }
  debug(...args: unknown[]): void { this.write('debug', args); }
  trace(...args: unknown[]): void { this.write('trace', args); }
  silent(): void {}

  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.made && (LEVELS[level] ?? 0) < (LEVELS[this.parent.level] ?? 0)) return;
    (this.real() as unknown as Record<Level, LogMethod>)[level](...args);
  }

  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }
}
