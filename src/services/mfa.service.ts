import { DomainError } from '../domain/errors.js';
import { newTotpSecret, totpUri, verifyTotp } from '../domain/totp.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { Db, Tx } from '../storage/db.js';
import type { MfaChallenge, MfaRepository } from '../repositories/mfa.repository.js';
import type { UserRecord } from '../repositories/users.repository.js';
import type { CachedUsersRepository } from '../repositories/users.cache.js';
import type { AuditService } from './audit.service.js';
import type { AccountService } from './accounts.service.js';
import { PUBLIC_CLIENTS } from './clients.service.js';
import type { TokenService } from './tokens.service.js';

/** How long an enrolment or a login waits for its code. */
const ENROLL_SECONDS = 600;
const LOGIN_SECONDS = 300;
/** Wrong codes one login challenge takes before it is thrown away. */
const MAX_ATTEMPTS = 5;
const RECOVERY_CODES = 10;
/** Public clients authenticate nothing (their secrets are published), so one may finish another's login. */
const PUBLIC_CLIENT_IDS = new Set(PUBLIC_CLIENTS.map((c) => c.id));

/**
 * Whether `clientId` may send the code for a login that `challengeClientId` started: the same
 * client, or two of Particle's public clients. particle-cli 3.43 starts `token create` as `user`
 * and sends the code as `CLI2`; Particle's token server then issues the token to the client that
 * started the login (node-oauth2-server `convertMfaBody`). A registered client's login stays its own.
 */
export function mayCompleteLogin(challengeClientId: string | null, clientId: string): boolean {
  if (challengeClientId === clientId) return true;
  return challengeClientId !== null && PUBLIC_CLIENT_IDS.has(challengeClientId) && PUBLIC_CLIENT_IDS.has(clientId);
}

/**
 * Multi-factor authentication with TOTP (RFC 6238): enrol with a secret and a first code, keep
 * ten single-use recovery codes (shown once), and complete password logins with the
 * `urn:custom:mfa-otp` or `urn:custom:recovery-code` grant
 * (docs/particle-compatibility.md#multi-factor-login).
 */
export function createMfaService(deps: {
  db: Db;
  repo: MfaRepository;
  users: CachedUsersRepository;
  accounts: AccountService;
  tokens: TokenService;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
}) {
  const { repo, users, secrets, clock, audit } = deps;

  const normaliseRecovery = (code: string) => code.toLowerCase().replace(/[^a-z0-9]/g, '');

  async function openChallenge(mfaToken: unknown, purpose: MfaChallenge['purpose']): Promise<MfaChallenge> {
    if (typeof mfaToken !== 'string' || mfaToken === '' || mfaToken.length > 200) {
      throw new DomainError('invalid_request', 'You must provide otp and mfa token.');
    }
    const challenge = await repo.findChallenge(secrets.sha256(mfaToken), purpose);
    if (!challenge || challenge.expiresAt.getTime() <= clock.nowMs()) {
      throw new DomainError('invalid_grant', 'The mfa_token is invalid or has expired; log in again');
    }
    return challenge;
  }

  async function wrongCode(challenge: MfaChallenge, userId: string, ip: string): Promise<never> {
    // The count and the end of a challenge at its last allowed wrong code are one write: a
    // challenge must never outlive its count.
    const attempts = await deps.db.transaction(async (tx) => {
      const n = await repo.countAttempt(challenge.tokenHash, tx);
      if (n >= MAX_ATTEMPTS) await repo.consumeChallenge(challenge.tokenHash, tx);
      return n;
    });
    await audit.record({ account: { kind: 'user', id: userId }, type: 'mfa.otp_failed', ip });
    throw new DomainError('invalid_grant', attempts >= MAX_ATTEMPTS ? 'Too many wrong codes; log in again' : 'The one-time password is invalid');
  }

  return {
    /** GET /v1/user/mfa-enable: a new secret and the mfa_token that confirms it. */
    async beginEnrollment(userId: string): Promise<{ mfa_token: string; secret: string; otpauth_url: string; qr_url: string }> {
      const user = await users.findById(userId);
      if (!user) throw new DomainError('invalid_token', 'The access token provided is invalid.');
      if (user.mfaSecret !== null) throw new DomainError('conflict', 'Multi-factor authentication is already on; disable it first to enrol again');
      const secret = newTotpSecret();
      const token = secrets.token();
      const now = clock.now();
      // A new enrolment replaces a pending one, all or nothing.
      await deps.db.transaction(async (tx) => {
        await repo.deleteChallengesOf(userId, 'enroll', tx);
        await repo.insertChallenge({
          tokenHash: secrets.sha256(token), purpose: 'enroll', userId, clientId: null, request: {},
          pendingSecret: secret, attempts: 0, createdAt: now, expiresAt: new Date(now.getTime() + ENROLL_SECONDS * 1000),
        }, tx);
      });
      const uri = totpUri(secret, user.username);
      return { mfa_token: token, secret, otpauth_url: uri, qr_url: uri };
    },

    /** POST /v1/user/mfa-enable: the first code turns MFA on and yields the recovery codes, once. */
    async confirmEnrollment(userId: string, currentTokenHash: string, body: { mfa_token?: unknown; otp?: unknown; invalidate_tokens?: boolean }, ip: string) {
      if (typeof body.otp !== 'string' && typeof body.otp !== 'number') throw new DomainError('invalid_request', 'You must provide otp and mfa token.');
      const challenge = await openChallenge(body.mfa_token, 'enroll');
      if (challenge.userId !== userId || challenge.pendingSecret === null) throw new DomainError('invalid_grant', 'The mfa_token is invalid or has expired; start again');
      const step = verifyTotp(challenge.pendingSecret, String(body.otp).trim(), clock.now(), null);
      if (step === null) return wrongCode(challenge, userId, ip);
      const codes = Array.from({ length: RECOVERY_CODES }, () => {
        const raw = secrets.token(5);
        return `${raw.slice(0, 5)}-${raw.slice(5)}`;
      });
      // The challenge is spent only if MFA is on with its recovery codes (and the other tokens
      // revoked when asked): a failure leaves the enrolment to be confirmed again.
      await deps.db.transaction(async (tx) => {
        if (!(await repo.consumeChallenge(challenge.tokenHash, tx))) throw new DomainError('invalid_grant', 'The mfa_token was already used');
        await users.setMfa(userId, challenge.pendingSecret, step, clock.now(), tx);
        await repo.replaceRecoveryCodes(userId, codes.map((c) => secrets.sha256(normaliseRecovery(c))), tx);
        if (body.invalidate_tokens) await deps.tokens.revokeSubject({ kind: 'user', userId }, currentTokenHash, tx);
      });
      await audit.record({ account: { kind: 'user', id: userId }, type: 'mfa.enabled', ip });
      return { enrolled: true, recovery_codes: codes };
    },

    /** PUT /v1/user/mfa-disable with the current password. */
    async disable(userId: string, currentPassword: unknown, ip: string): Promise<void> {
      const user = await users.findById(userId);
      if (!user) throw new DomainError('invalid_token', 'The access token provided is invalid.');
      await deps.accounts.confirmPassword(user, currentPassword, ip);
      if (user.mfaSecret === null) throw new DomainError('conflict', 'Multi-factor authentication is not on');
      await deps.db.transaction(async (tx) => {
        await users.setMfa(userId, null, null, clock.now(), tx);
        await repo.deleteRecoveryCodes(userId, tx);
      });
      await audit.record({ account: { kind: 'user', id: userId }, type: 'mfa.disabled', ip });
    },

    /** The password was right and MFA is on: remember the request and hand out an mfa_token. */
    async openLogin(user: UserRecord, clientId: string, request: MfaChallenge['request']): Promise<string> {
      const token = secrets.token();
      const now = clock.now();
      await repo.insertChallenge({
        tokenHash: secrets.sha256(token), purpose: 'login', userId: user.id, clientId, request,
        pendingSecret: null, attempts: 0, createdAt: now, expiresAt: new Date(now.getTime() + LOGIN_SECONDS * 1000),
      });
      return token;
    },

    /**
     * The second step of a login: an OTP or a recovery code against an mfa_token of the same
     * client (or, between public clients, another: `mayCompleteLogin`). `issue` turns the
     * challenge's stored request and client into a token, in the transaction that spends the
     * code and the challenge, and its answer is returned.
     */
    async completeLogin<T>(input: { mfaToken: unknown; otp?: unknown; recoveryCode?: unknown; clientId: string; ip: string },
      issue: (user: UserRecord, challenge: MfaChallenge, tx: Tx) => Promise<T>): Promise<T> {
      const usingRecovery = input.recoveryCode !== undefined;
      const code = usingRecovery ? input.recoveryCode : input.otp;
      if (typeof code !== 'string' || code === '' || code.length > 64) {
        throw new DomainError('invalid_request', usingRecovery ? 'You must provide recovery_code and mfa token.' : 'You must provide otp and mfa token.');
      }
      const challenge = await openChallenge(input.mfaToken, 'login');
      if (!mayCompleteLogin(challenge.clientId, input.clientId)) throw new DomainError('invalid_grant', 'The mfa_token was issued to another client');
      const user = await users.findById(challenge.userId);
      if (!user || user.mfaSecret === null) throw new DomainError('invalid_grant', 'The mfa_token is invalid or has expired; log in again');
      const step = usingRecovery ? null : verifyTotp(user.mfaSecret, code.trim(), clock.now(), user.mfaLastStep);
      if (!usingRecovery && step === null) return wrongCode(challenge, user.id, input.ip);
      // Spending the code (a recovery code, or the TOTP step against replay) and the challenge,
      // and issuing the token, are one write: a code is never used up by a login that did not
      // complete, nor without the token it was for.
      const done = await deps.db.transaction(async (tx) => {
        const spent = step === null
          ? await repo.useRecoveryCode(user.id, secrets.sha256(normaliseRecovery(code)), clock.now(), tx)
          : await users.advanceMfaStep(user.id, step, tx);
        if (!spent) return null;
        if (!(await repo.consumeChallenge(challenge.tokenHash, tx))) throw new DomainError('invalid_grant', 'The mfa_token was already used');
        if (usingRecovery) await audit.record({ account: { kind: 'user', id: user.id }, type: 'mfa.recovery_code_used', ip: input.ip }, tx);
        return { answer: await issue(user, challenge, tx) };
      });
      if (!done) return wrongCode(challenge, user.id, input.ip);
      return done.answer;
    },

    purgeExpired: () => repo.purgeExpired(clock.now()),
  };
}

export type MfaService = ReturnType<typeof createMfaService>;
