import { DomainError } from '../domain/errors.js';

/**
 * Failures that mean the store cannot be reached now, as opposed to a statement it refused: they
 * answer 503 `service_unavailable` with Retry-After (docs/operations.md, "When the store goes
 * away"), so that a client retries instead of taking a bug for an answer. A statement PostgreSQL
 * refused (a constraint, a syntax error, an internal error) is not one of them.
 */

/** What a client is told to wait before it retries: about what a PostgreSQL restart or fail-over takes. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/**
 * SQLSTATE codes of a server that is going away or cannot take the work (PostgreSQL, Appendix A):
 * class 08 (connection exception), class 53 (insufficient resources: too many connections, disk
 * full, out of memory), and of class 57 the server's shutdown, crash and start-up (57P01-57P03)
 * and a dropped database or idle session (57P04, 57P05).
 */
const UNAVAILABLE_STATES = /^(08|53)|^57P0[1-5]$/;

/** The socket's own errors (Node.js) on the way to the server. */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'EHOSTDOWN']);

/**
 * What node-postgres says, with no code, when a connection ends under a query, a pooled
 * connection cannot be had in time (connectionTimeoutMillis), a statement waits past its
 * query_timeout, or the pool is closing.
 */
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed|Cannot use a pool after calling end)/;

/** An error's `code` (a SQLSTATE, or a socket's code) and message, when it has them. */
function described(err: unknown): { code: string | undefined; message: string | undefined } {
  const { code, message } = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown };
  return { code: typeof code === 'string' ? code : undefined, message: typeof message === 'string' ? message : undefined };
}

export function isConnectionFailure(err: unknown): boolean {
  const { code, message } = described(err);
  if (code !== undefined && (UNAVAILABLE_STATES.test(code) || SOCKET_ERRORS.has(code))) return true;
  return message !== undefined && PG_MESSAGES.test(message);
}

/**
 * The answer for work that needs the store while it is unreachable: a `service_unavailable`
 * like any other (the error handler, the bus and the gateway treat it so), of its own class so
 * that the store's watch (watch.ts) tells it from NATS's. `cause` goes to the logs only.
 */
export class StoreUnavailable extends DomainError {
  constructor(cause: unknown) {
    super('service_unavailable', 'Storage is unreachable; retry shortly', { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS, cause });
  }
}

export const storeUnavailable = (cause: unknown): StoreUnavailable => new StoreUnavailable(cause);

export const isStoreUnavailable = (err: unknown): err is StoreUnavailable => err instanceof StoreUnavailable;

/**
 * SQLSTATE class 40, transaction rollback (PostgreSQL, Appendix A): a deadlock (40P01) or a
 * serialization failure (40001). The statement met another's work at the same moment and was
 * rolled back; the same request succeeds when made again. The store is up, so this is not
 * `StoreUnavailable` (which the store's watch counts as an outage).
 */
const CONFLICT_STATES = /^40/;

/** What a request that lost such a race answers: 503 with a short Retry-After. */
const conflicted = (cause: unknown): DomainError =>
  new DomainError('service_unavailable', 'The request met another change at the same moment and was undone; retry it', { retryAfterSeconds: 1, cause });

const isConflict = (err: unknown): boolean => CONFLICT_STATES.test(described(err).code ?? '');

/**
 * Rethrows a connection failure as the store's unavailability, a transaction rolled back for a
 * conflict as `conflicted`, and anything else as it is.
 */
export function translated(err: unknown): never {
  if (isConnectionFailure(err)) throw storeUnavailable(err);
  throw isConflict(err) ? conflicted(err) : err;
}
