import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { Settings } from '../config/settings.js';
import { DomainError } from '../domain/errors.js';
import type { Metrics } from '../platform/metrics.js';
import { limitKey, type RateLimits, type RequestCounts, type WindowLimit } from '../services/rate-limits/index.js';

/** The limits a route adds to the limit on all requests (`config.limit`). */
export type RouteLimit = 'tokens' | 'eventStreams';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A limit of its own the route counts too, per client address: `tokens` (token creation) or
     * `eventStreams` (event streams opened); or a function of the request that says which, if any.
     */
    limit?: RouteLimit | ((req: FastifyRequest) => RouteLimit | null);
  }
}

export interface RequestLimits {
  /**
   * Admits an event stream about to open: answers its release (to call when it ends), or
   * throws 429 when the address already holds RATE_LIMIT_OPEN_STREAMS streams.
   */
  openStream(req: FastifyRequest, reply: FastifyReply): () => void;
}

/** Probes and scrapes must see the truth whoever floods: never limited (docs/operations.md). */
const UNLIMITED = new Set(['/healthz', '/metrics']);

/**
 * A stream ends only when its client leaves, which the server cannot foresee: the client is told
 * to try again in a while.
 */
const OPEN_STREAMS_RETRY_SECONDS = 30;

/** The label of each limit in `skyport_rate_limited_total`, and what the refusal says is over. */
const LIMITS = {
  requests: { label: 'requests', what: 'requests' },
  eventStreams: { label: 'event_streams', what: 'event streams opened' },
  tokens: { label: 'tokens', what: 'token requests' },
  openStreams: { label: 'open_streams', what: 'event streams open at once' },
} as const;

/**
 * Per-address limits on request volume (docs/security.md, "Limits on request volume"). Counts
 * come from the node's counters (src/services/rate-limits/), which take time from the injected
 * clock and, in a cluster, sum the nodes' counts; addresses are folded by @fastify/rate-limit's
 * `normalizeIP`.
 * - Every request but /healthz and /metrics counts against RATE_LIMIT_REQUESTS in a synchronous
 *   `onRequest` hook, before its body is read or its token checked. Not through the library's
 *   own hook: that one is an async function that awaits twice, and on this server a request
 *   whose hook awaits costs about 9 µs more CPU (a quarter of an authenticated read), where this
 *   hook costs a few µs at most, less than a shared machine's load moves a run (docs/benchmarks.md,
 *   "Measurements behind design choices").
 * - Routes with `config.limit` count against their own limit too, through the library's
 *   `createRateLimit` over a store of our own (`countsStore`) on the same counters, after the body
 *   is parsed (customer creation counts only with client credentials). These are token requests
 *   and stream opens, dear anyway.
 * - Event streams are admitted by `openStream` (RATE_LIMIT_OPEN_STREAMS).
 * A refusal is 429 `rate_limit_exceeded` through the one error handler, with Retry-After; every
 * answer carries the IETF draft's RateLimit-Limit, -Remaining and -Reset (the names the library
 * uses with `enableDraftSpec`) of the tightest limit the request counted against. A limit of 0 is
 * off and costs nothing.
 */
export async function requestLimits(app: FastifyInstance, deps: {
  limits: RateLimits;
  settings: Pick<Settings, 'rateLimitRequests' | 'rateLimitEventStreams' | 'rateLimitOpenStreams' | 'rateLimitTokens' | 'rateLimitWindowSeconds'>;
  metrics: Pick<Metrics, 'rateLimited'>;
}): Promise<RequestLimits> {
  const { limits, settings, metrics } = deps;
  const windowMs = settings.rateLimitWindowSeconds * 1000;
  // The library's own folding: an IPv4-mapped IPv6 address is its IPv4 address, and IPv6
  // addresses count per /64 (one subscriber's usual allocation). An IPv4 address (no colon) is
  // already in its folded form.
  const addressOf = (req: FastifyRequest) => {
    const ip = req.ip;
    return ip.includes(':') ? normalizeIP(ip) : ip;
  };

  function refused(limit: keyof typeof LIMITS, req: FastifyRequest, max: number, ttlMs: number, per: string): DomainError {
    const { label, what } = LIMITS[limit];
    metrics.rateLimited.inc({ limit: label });
    const address = addressOf(req);
    // One line per address and limit per window on this node, not one per refused request.
    if (limits.requests.firstReport(`refused ${label} ${address}`, windowMs)) {
      req.log.warn({ limit: label, address, max }, `client address over its limit of ${what}: refused until the window ends`);
    }
    const seconds = Math.max(1, Math.ceil(ttlMs / 1000));
    return withoutStack(() => new DomainError('rate_limit_exceeded', `Too many ${what} from this address (at most ${max} ${per}); retry in ${seconds} s`, { retryAfterSeconds: seconds }));
  }
  const perWindow = `every ${settings.rateLimitWindowSeconds} s`;

  if (settings.rateLimitRequests > 0) {
    const max = settings.rateLimitRequests;
    // An app-wide hook, so that paths no route serves count too.
    app.addHook('onRequest', function limitAllRequests(req, reply, done) {
      if (UNLIMITED.has(req.routeOptions.url ?? '')) {
        done();
        return;
      }
      const tally = limits.requests.add(limitKey('requests', addressOf(req)), windowMs, max);
      const resetSeconds = Math.ceil(tally.resetMs / 1000);
      rateLimitHeaders(reply, max, Math.max(0, max - tally.count), resetSeconds);
      done(tally.count > max ? refused('requests', req, max, tally.resetMs, perWindow) : undefined);
    });
  }

  if (settings.rateLimitEventStreams > 0 || settings.rateLimitTokens > 0) {
    await app.register(rateLimit, {
      // Only `createRateLimit` below: no hook of the library's own.
      global: false,
      enableDraftSpec: true,
      store: countsStore(limits.requests),
      timeWindow: windowMs,
    });
  }

  const routeLimits: Partial<Record<RouteLimit, preValidationHookHandler>> = {};
  for (const [limit, max] of [['tokens', settings.rateLimitTokens], ['eventStreams', settings.rateLimitEventStreams]] as const) {
    if (max === 0) continue;
    // Called by our own hook: a route hook of the plugin skips a request on which another of its
    // hooks ran (`rateLimitRan`), and a route may count against two limits.
    const count = app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => limitKey(limit satisfies WindowLimit, addressOf(req)) });
    routeLimits[limit] = async function limitRoute(req, reply) {
      const tally = await count(req);
      if (tally.isAllowed) return;
      if (tally.isExceeded) {
        rateLimitHeaders(reply, tally.max, 0, tally.ttlInSeconds);
        throw refused(limit, req, tally.max, tally.ttl, perWindow);
      }
      // The draft has one set of headers: they tell the limit closest to refusing.
      const shown = Number(reply.getHeader('ratelimit-remaining') ?? Infinity);
      if (tally.remaining < shown) rateLimitHeaders(reply, tally.max, tally.remaining, tally.ttlInSeconds);
    };
  }
  app.addHook('onRoute', (route) => {
    const limit = route.config?.limit;
    if (limit === undefined) return;
    const hook = typeof limit === 'function'
      ? async function limitRouteIf(this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
        const which = limit(req);
        const applied = which === null ? undefined : routeLimits[which];
        if (applied) await applied.call(this, req, reply, () => undefined);
      }
      : routeLimits[limit];
    if (hook === undefined) return;
    const own = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    route.preValidation = [hook as preValidationHookHandler, ...own];
  });

  return {
    openStream(req, reply) {
      const max = settings.rateLimitOpenStreams;
      if (max === 0) return () => undefined;
      const release = limits.streams.take(addressOf(req), max);
      if (release !== null) return release;
      rateLimitHeaders(reply, max, 0, OPEN_STREAMS_RETRY_SECONDS);
      throw refused('openStreams', req, max, OPEN_STREAMS_RETRY_SECONDS * 1000, 'at once');
    },
  };
}

/**
 * Makes an error without capturing a stack trace. A refusal's stack says nothing (it is always
 * this file), and under a flood capturing it was an eighth of the server's time per refusal.
 */
function withoutStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The IETF draft's headers (draft-ietf-httpapi-ratelimit-headers), as the library names them with `enableDraftSpec`. */
function rateLimitHeaders(reply: FastifyReply, max: number, remaining: number, resetSeconds: number): void {
  void reply.header('ratelimit-limit', max).header('ratelimit-remaining', remaining).header('ratelimit-reset', resetSeconds);
}

/**
 * The store of @fastify/rate-limit (its `incr`/`read`/`child` interface) over the node's request
 * counters, instead of the library's LocalStore, which reads Date.now() and counts in one process.
 */
function countsStore(counts: RequestCounts) {
  type Answer = (error: Error | null, result?: { current: number; ttl: number }) => void;
  return class CountsStore {
    incr(key: string, answer: Answer, timeWindow: number, max: number): void {
      const tally = counts.add(key, timeWindow, max);
      answer(null, { current: tally.count, ttl: tally.resetMs });
    }

    read(key: string, answer: Answer, timeWindow: number): void {
      const tally = counts.read(key, timeWindow);
      answer(null, { current: tally.count, ttl: tally.resetMs });
    }

    /** Route limits count in the same counters, under keys of their own (`limitKey`). */
    child(): CountsStore {
      return this;
    }
  };
}
