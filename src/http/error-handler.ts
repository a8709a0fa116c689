import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, ERRORS } from '../domain/errors.js';
import { noSniff } from './security-headers.js';

/**
 * The one place errors become HTTP answers. Every answer is JSON: `{ok:false, error,
 * error_description}` plus the error's public details (mfa_token, info, errors, violations),
 * which also satisfies RFC 6749 §5.2 on the OAuth endpoints. A 5xx shows only a request id;
 * its cause goes to the log. `notFound` answers requests no route takes; null leaves that to a
 * scope of the app (the console's, src/http/console.ts, which answers its own pages).
 */
export function installErrorHandling(app: FastifyInstance, notFound: ((req: FastifyRequest, reply: FastifyReply) => FastifyReply) | null = routeNotFound): void {
  app.setErrorHandler(function handleError(err: FastifyError | DomainError | Error, req, reply) {
    const domain = toDomainError(err, req);
    if (domain.code === 'service_unavailable') {
      // The store or NATS is away: its watch logs the outage once (storage/watch.ts); each
      // request answered 503 meanwhile is a line of its own, as a refusal is, not a failure.
      req.log.info({ code: domain.code, status: domain.status }, domain.message);
    } else if (domain.status >= 500) {
      req.log.error({ err }, 'request failed');
    } else if (domain.code === 'rate_limit_exceeded') {
      // A flood: the limiter says so once per address, limit and window (http/rate-limits.ts),
      // and each refusal's status is in its request's own line; a line more per refusal would
      // make a flood's every request dearer.
    } else {
      req.log.info({ code: domain.code, status: domain.status }, domain.message);
    }
    return sendError(reply, domain, req.id);
  });
  if (notFound) app.setNotFoundHandler(notFound);
}

/** A request no route takes: 404, in JSON. */
export function routeNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, new DomainError('not_found', `No route ${req.method} ${req.url.split('?')[0]}`), req.id);
}

/**
 * Fastify's `frameworkErrors` option: errors its router raises before any hook runs (a path with
 * bad percent-encoding, a path parameter over maxParamLength) get the same JSON bodies.
 */
export function frameworkError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = err.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? new DomainError('invalid_request', 'A path segment of the URL is too long')
    : err.code === 'FST_ERR_BAD_URL'
      ? new DomainError('invalid_request', 'The URL path is not valid percent-encoding')
      : toDomainError(err, req);
  // The onRequest hooks do not run for these.
  stampRequestId(req, reply);
  noSniff(reply);
  req.log.info({ code: e.code, status: e.status }, e.message);
  return sendError(reply, e, req.id);
}

/**
 * Request ids: a caller's `x-request-id` when it is sane (so that logs can be joined across
 * services), otherwise this process's random prefix and a counter: unique, and cheaper than a
 * UUID on every request. Fastify's genReqId option, so every request (framework errors too)
 * gets one before any hook runs.
 */
export function requestIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id'];
  if (typeof given === 'string' && given.length > 0 && given.length <= 64 && SANE_ID.test(given)) return given;
  return `${ID_PREFIX}-${(nextId++).toString(36)}`;
}

const SANE_ID = /^[\w.-]+$/;
const ID_PREFIX = randomUUID().slice(0, 13).replace('-', '');
let nextId = 0;

/** Echoes the request id on the answer. */
export function stampRequestId(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', req.id);
}

export function sendError(reply: FastifyReply, e: DomainError, requestId: string): FastifyReply {
  const spec = ERRORS[e.code];
  if (e.retryAfterSeconds !== undefined) reply.header('Retry-After', String(e.retryAfterSeconds));
  // RFC 6749 §5.2 / RFC 6750 §3: tell the client which authentication scheme failed.
  if (e.code === 'invalid_client') reply.header('WWW-Authenticate', 'Basic realm="Skyport"');
  if (e.code === 'invalid_token') reply.header('WWW-Authenticate', 'Bearer realm="Skyport", error="invalid_token"');
  if (e.code === 'insufficient_scope') reply.header('WWW-Authenticate', 'Bearer realm="Skyport", error="insufficient_scope"');
  const body: Record<string, unknown> = e.status >= 500
    ? { ok: false, error: e.code, error_description: `${e.message} (request ${requestId})`, request_id: requestId }
    : { ok: false, error: 'wire' in spec ? spec.wire : e.code, error_description: e.message, ...e.details };
  return reply.code(e.status).type('application/json; charset=utf-8').send(body);
}

function toDomainError(err: FastifyError | DomainError | Error, req: FastifyRequest): DomainError {
  if (err instanceof DomainError) return err;
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext ?? 'request';
    const first = fe.validation[0];
    const path = first ? `${where}${first.instancePath.replace(/\//g, '.')}` : where;
    const what = first?.keyword === 'required' ? `${where}.${(first.params as { missingProperty: string }).missingProperty} is required`
      : first?.keyword === 'additionalProperties' ? `${where} has an unknown field "${(first.params as { additionalProperty: string }).additionalProperty}"`
        : `${path} ${first?.message ?? 'is invalid'}`;
    return new DomainError('invalid_request', what);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      // The token endpoint takes form encoding only, and says so in the words of Particle's token
      // server (docs/particle-compatibility.md#request-encoding-and-client-credentials).
      if (req.url.startsWith('/oauth/')) return new DomainError('invalid_request', 'Method must be POST with application/x-www-form-urlencoded encoding');
      return new DomainError('unsupported_media_type', `Content-Type ${String(req.headers['content-type']).slice(0, 100)} is not accepted here; send application/json or application/x-www-form-urlencoded`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DomainError('payload_too_large', 'The request body is too large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DomainError('invalid_request', 'The body is empty but Content-Type says JSON');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new DomainError('invalid_request', 'The body is not valid JSON');
    default:
      break;
  }
  if (err instanceof SyntaxError || fe.statusCode === 400) return new DomainError('invalid_request', 'The body could not be parsed');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 413) return new DomainError('payload_too_large', 'The request body is too large');
    if (fe.statusCode === 415) return new DomainError('unsupported_media_type', 'This Content-Type is not accepted here');
    return new DomainError('invalid_request', fe.message);
  }
  return new DomainError('server_error', 'Internal error', { cause: err });
}
