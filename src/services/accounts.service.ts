import { DomainError } from '../domain/errors.js';
import type { FailureLimiter } from '../domain/failure-limiter.js';
import { validateAccountInfo, validateEmail, validateNewPassword } from '../domain/accounts.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { UserRecord, UsersRepository } from '../repositories/users.repository.js';
import type { Db, Tx } from '../storage/db.js';
import type { AuditService } from './audit.service.js';
import type { TokenService } from './tokens.service.js';
import type { ClientService } from './clients.service.js';

/** GET /v1/user (docs/particle-compatibility.md#user-accounts). */
export interface UserProfile {
  username: string;
  subscription_ids: string[];
  account_info: Record<string, string | boolean>;
  scim_provisioned: boolean;
  no_password: boolean;
  mfa: { enabled: boolean };
  tos: null;
  memberships: unknown[];
  wifi_device_count: number;
  cellular_device_count: number;
  created_at: string;
}

export interface UserUpdate {
  account_info?: unknown;
  username?: unknown;
  password?: unknown;
  current_password?: unknown;
  invalidate_tokens?: boolean;
}

export function createAccountService(deps: {
  db: Db;
  users: UsersRepository;
  tokens: TokenService;
  clients: ClientService;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  limiter: FailureLimiter;
  signupOpen: boolean;
  /** Products whose team has this user alone; deleting the account would orphan them. */
  soleMemberOf(userId: string): Promise<number[]>;
  /** Releases the account's devices and drops its claim codes and webhooks, within its deletion. */
  releaseOwned(userId: string, tx: Tx): Promise<void>;
  /** An account was deleted (committed): what keeps its parts in memory lets them go (its webhooks). */
  deleted?: (userId: string) => void;
}) {
  const { users, secrets, clock, limiter, audit } = deps;

  async function create(input: { username?: unknown; password?: unknown; account_info?: unknown }, ip: string | null): Promise<UserRecord> {
    const username = validateEmail(input.username);
    const password = validateNewPassword(input.password);
    const accountInfo = validateAccountInfo(input.account_info);
    const now = clock.now();
    const user: UserRecord = {
      id: secrets.uuid(),
      username,
      passwordHash: await secrets.hashPassword(password),
      accountInfo,
      mfaSecret: null,
      mfaLastStep: null,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await users.insert(user))) throw taken(username);
    await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.signup', ip });
    return user;
  }

  /**
   * Checks a password under the lock-out rules: a locked account is refused even with the right
   * password; an unknown username costs the same time as a known one (no account enumeration).
   */
  async function verifyPassword(username: string, password: string, ip: string): Promise<UserRecord> {
    const key = `user:${username.toLowerCase()}`;
    await limiter.check(key, ip);
    const user = username.length <= 254 ? await users.findByUsername(username) : undefined;
    const ok = await secrets.verifyPassword(user?.passwordHash ?? null, password);
    if (!user || !ok) {
      await limiter.fail(key, ip);
      if (user) await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.login_failed', ip });
      // Unknown usernames lock out alike, so that the answer does not tell which accounts exist.
      try {
        await limiter.check(key, ip);
      } catch (lock) {
        if (user) await audit.record({ account: { kind: 'user', id: user.id }, type: 'user.locked_out', ip });
        throw lock;
      }
      throw new DomainError('invalid_grant', 'User credentials are invalid');
    }
    await limiter.succeed(key);
    return user;
  }

  async function mustGet(userId: string): Promise<UserRecord> {
    const user = await users.findById(userId);
    if (!user) throw new DomainError('invalid_token', 'The access token provided is invalid.');
    return user;
  }

  /** For routes that need the current password: a wrong one is 403, not a token error. */
  async function confirmPassword(user: UserRecord, given: unknown, ip: string, field = 'current_password'): Promise<void> {
    if (typeof given !== 'string' || given === '') throw new DomainError('invalid_request', `${field} is required`);
    try {
      await verifyPassword(user.username, given, ip);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'invalid_grant') throw new DomainError('forbidden', 'The current password is wrong');
      throw err;
    }
  }

  return {
    /** Open sign-up (POST /v1/users); refused when SIGNUP=off. */
    async signUp(input: { username?: unknown; password?: unknown; account_info?: unknown }, ip: string): Promise<void> {
      if (!deps.signupOpen) throw new DomainError('signup_closed', 'Sign-up is closed on this server; ask its operator for an account');
      await create(input, ip);
    },

    /** Bootstrap an account whatever SIGNUP says (`skyport user create`). */
    bootstrap: (input: { username: string; password: string }) => create(input, null),

    verifyPassword,
    confirmPassword,

    async profile(userId: string): Promise<UserProfile> {
      const u = await mustGet(userId);
      let made = profiles.get(u);
      if (!made) {
        made = profileOf(u);
        profiles.set(u, made);
      }
      return made;
    },

    /**
     * PUT /v1/user: profile fields, or a new username or password with the current password.
     * A new password revokes every other token of the account (the caller's stays).
     */
    async update(userId: string, currentTokenHash: string, body: UserUpdate, ip: string): Promise<void> {
      const user = await mustGet(userId);
      const change: { username?: string; passwordHash?: string; accountInfo?: Record<string, string | boolean> } = {};
      if (body.account_info !== undefined) change.accountInfo = validateAccountInfo(body.account_info);
      const sensitive = body.username !== undefined || body.password !== undefined;
      if (sensitive) {
        const username = body.username === undefined ? undefined : validateEmail(body.username);
        const password = body.password === undefined ? undefined : validateNewPassword(body.password);
        await confirmPassword(user, body.current_password, ip);
        if (username !== undefined) change.username = username;
        if (password !== undefined) change.passwordHash = await secrets.hashPassword(password);
      }
      if (Object.keys(change).length === 0 && !body.invalidate_tokens) {
        throw new DomainError('invalid_request', 'Nothing to change: send account_info, username or password');
      }
      const revoking = change.passwordHash !== undefined || body.invalidate_tokens === true;
      // A new password and the revocation of the other tokens are one write: a password changed
      // to shut somebody out must not leave their tokens working.
      const revoked = await deps.db.transaction(async (tx) => {
        // A taken username is thrown, so that the transaction rolls back.
        if (Object.keys(change).length > 0 && (await users.update(userId, change, clock.now(), tx)) === 'taken') throw taken(String(change.username));
        return revoking ? deps.tokens.revokeSubject({ kind: 'user', userId }, currentTokenHash, tx) : 0;
      });
      const account = { kind: 'user' as const, id: userId };
      if (change.accountInfo) await audit.record({ account, type: 'user.profile_changed', ip });
      if (change.username) await audit.record({ account, type: 'user.username_changed', ip, details: { from: user.username, to: change.username } });
      if (change.passwordHash) await audit.record({ account, type: 'user.password_changed', ip });
      if (revoking) await audit.record({ account, type: 'tokens.revoked', ip, details: { count: revoked, reason: change.passwordHash ? 'password changed' : 'asked' } });
    },

    /** DELETE /v1/user: with the password; removes the account, its clients and its tokens. */
    async remove(userId: string, password: unknown, ip: string): Promise<void> {
      const user = await mustGet(userId);
      await confirmPassword(user, password, ip, 'password');
      const orphans = await deps.soleMemberOf(userId);
      if (orphans.length > 0) {
        throw new DomainError('conflict', `The account is the only team member of product(s) ${orphans.join(', ')}; delete them or add another member first`);
      }
      await deps.db.transaction(async (tx) => {
        await deps.clients.removeAllOf({ kind: 'user', id: userId }, tx);
        await deps.releaseOwned(userId, tx);
        await deps.tokens.revokeSubject({ kind: 'user', userId }, null, tx);
        await users.delete(userId, tx);
      });
      deps.deleted?.(userId);
      await audit.record({ account: { kind: 'user', id: userId }, type: 'user.deleted', ip, details: { username: user.username } });
    },

  };
}

function taken(username: string): DomainError {
  return new DomainError('username_taken', `The username ${username} is already taken`, { details: { errors: ['username already taken'] } });
}

export type AccountService = ReturnType<typeof createAccountService>;

/**
 * GET /v1/user's answer for an account record. Records are served from memory and replaced on
 * every write, so an answer is kept per record (`profiles`, weakly) and built once: a read then
 * costs no new object and no date formatting (`toISOString` was 1-3 µs of a read's 64).
 */
const profiles = new WeakMap<UserRecord, UserProfile>();

function profileOf(u: UserRecord): UserProfile {
  return {
    username: u.username,
    subscription_ids: [],
    account_info: u.accountInfo,
    scim_provisioned: false,
    no_password: false,
    mfa: { enabled: u.mfaSecret !== null },
    tos: null,
    memberships: [],
    wifi_device_count: 0,
    cellular_device_count: 0,
    created_at: u.createdAt.toISOString(),
  };
}
