import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.js';
import { scopeAllows, type Scope } from '../domain/scopes.js';
import type { Subject } from '../domain/subject.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import type { TokenService } from '../services/tokens.service.js';
import { accessTokenOf } from './credentials.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified access token of the request, set by an auth guard. */
    auth: AccessTokenRecord | null;
  }
}

export interface GuardOptions {
  /** Which token subjects may use the route (default: any). */
  subjects?: ReadonlyArray<Subject['kind']>;
  /** The scope the route needs (default: full scope). */
  scope?: Scope;
  /** Any scope will do (describing or revoking the token itself). */
  anyScope?: boolean;
}

/**
 * Builds a preHandler that verifies the access token and checks its subject and scope, so that
 * a route states who may call it in one line: `preHandler: guard({ subjects: ['user'] })`.
 */
export function createGuard(tokens: Pick<TokenService, 'authenticate' | 'cachedRecord'>) {
  return function guard(options: GuardOptions = {}) {
    function admit(req: FastifyRequest, record: AccessTokenRecord): DomainError | undefined {
      if (!options.anyScope && !scopeAllows(record.scope, options.scope ?? null)) {
        return new DomainError('insufficient_scope', `This token's scope (${record.scope}) does not allow this request`);
      }
      if (options.subjects && !options.subjects.includes(record.subject.kind)) {
        return new DomainError('forbidden', `This route is not for ${record.subject.kind} tokens`);
      }
      req.auth = record;
      return undefined;
    }
    // A callback hook, not a promise: nearly every request's token is in memory, and Fastify runs
    // a callback hook that is done at once without a turn through the microtask queue.
    return function requireToken(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
      const token = accessTokenOf(req);
      let record: AccessTokenRecord | undefined;
      try {
        record = tokens.cachedRecord(token);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (record) {
        done(admit(req, record));
        return;
      }
      tokens.authenticate(token).then((r) => done(admit(req, r)), done);
    };
  };
}

export type Guard = ReturnType<typeof createGuard>;

/** A guard run from inside a handler rather than as its preHandler. */
export function checkToken(req: FastifyRequest, reply: FastifyReply, requireToken: ReturnType<Guard>): Promise<void> {
  return new Promise((resolve, reject) => requireToken(req, reply, (err) => (err ? reject(err) : resolve())));
}

/** The verified token of a guarded route. */
export function authOf(req: FastifyRequest): AccessTokenRecord {
  if (!req.auth) throw new DomainError('server_error', 'route is missing its auth guard');
  return req.auth;
}

/** The user id of a guarded route that admits only user tokens. */
export function userIdOf(req: FastifyRequest): string {
  const s = authOf(req).subject;
  if (s.kind !== 'user') throw new DomainError('forbidden', 'This route is for user accounts');
  return s.userId;
}
