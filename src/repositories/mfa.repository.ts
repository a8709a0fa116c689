import type { Queryable, Tx } from '../storage/db.js';

export interface MfaChallenge {
  tokenHash: string;
  purpose: 'login' | 'enroll';
  userId: string;
  clientId: string | null;
  /**
   * What the login asked for, restored by the OTP step, which sends neither lifetime nor scope
   * (docs/particle-compatibility.md#multi-factor-login).
   */
  request: { expiresIn?: string; expiresAt?: string; scope?: string };
  pendingSecret: string | null;
  attempts: number;
  createdAt: Date;
  expiresAt: Date;
}

interface Row {
  token_hash: string; purpose: 'login' | 'enroll'; user_id: string; client_id: string | null;
  request: MfaChallenge['request']; pending_secret: string | null; attempts: number; created_at: Date; expires_at: Date;
}

const toChallenge = (r: Row): MfaChallenge => ({
  tokenHash: r.token_hash,
  purpose: r.purpose,
  userId: r.user_id,
  clientId: r.client_id,
  request: r.request ?? {},
  pendingSecret: r.pending_secret,
  attempts: Number(r.attempts),
  createdAt: new Date(r.created_at),
  expiresAt: new Date(r.expires_at),
});

export function createMfaRepository(db: Queryable) {
  return {
    async insertChallenge(c: MfaChallenge, q: Queryable = db): Promise<void> {
      await q.query(
        `INSERT INTO mfa_challenges (token_hash, purpose, user_id, client_id, request, pending_secret, attempts, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`,
        [c.tokenHash, c.purpose, c.userId, c.clientId, JSON.stringify(c.request), c.pendingSecret, c.createdAt, c.expiresAt],
      );
    },
    async findChallenge(tokenHash: string, purpose: MfaChallenge['purpose'], q: Queryable = db): Promise<MfaChallenge | undefined> {
      const rows = await q.query<Row>('SELECT * FROM mfa_challenges WHERE token_hash = $1 AND purpose = $2', [tokenHash, purpose]);
      return rows[0] && toChallenge(rows[0]);
    },
    /** Counts a wrong code against the challenge; returns the new count. */
    async countAttempt(tokenHash: string, q: Queryable = db): Promise<number> {
      const rows = await q.query<{ attempts: number }>('UPDATE mfa_challenges SET attempts = attempts + 1 WHERE token_hash = $1 RETURNING attempts', [tokenHash]);
      return rows[0] ? Number(rows[0].attempts) : Number.MAX_SAFE_INTEGER;
    },
    /** Takes a challenge out: true for the one caller that got it. */
    async consumeChallenge(tokenHash: string, q: Queryable = db): Promise<boolean> {
      return (await q.query('DELETE FROM mfa_challenges WHERE token_hash = $1 RETURNING 1', [tokenHash])).length === 1;
    },
    async deleteChallengesOf(userId: string, purpose: MfaChallenge['purpose'], q: Queryable = db): Promise<void> {
      await q.query('DELETE FROM mfa_challenges WHERE user_id = $1 AND purpose = $2', [userId, purpose]);
    },
    async purgeExpired(now: Date): Promise<void> {
      await db.query('DELETE FROM mfa_challenges WHERE expires_at < $1', [now]);
    },
    /** A user's new set of recovery codes in place of the old: two statements, so a transaction's. */
    async replaceRecoveryCodes(userId: string, hashes: string[], tx: Tx): Promise<void> {
      await tx.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId]);
      await tx.query('INSERT INTO recovery_codes (code_hash, user_id) SELECT h, $2 FROM unnest($1::text[]) AS h', [hashes, userId]);
    },
    /** Marks an unused code as used; true when it was the user's and unused. */
    async useRecoveryCode(userId: string, codeHash: string, at: Date, q: Queryable = db): Promise<boolean> {
      const rows = await q.query('UPDATE recovery_codes SET used_at = $3 WHERE code_hash = $1 AND user_id = $2 AND used_at IS NULL RETURNING 1', [codeHash, userId, at]);
      return rows.length === 1;
    },
    async deleteRecoveryCodes(userId: string, q: Queryable = db): Promise<void> {
      await q.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId]);
    },
  };
}

export type MfaRepository = ReturnType<typeof createMfaRepository>;
