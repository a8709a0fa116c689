import type { Queryable, Tx } from '../storage/db.js';

export interface UserRecord {
  id: string;
  username: string;
  passwordHash: string;
  accountInfo: Record<string, string | boolean>;
  mfaSecret: string | null;
  mfaLastStep: number | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string; username: string; password_hash: string; account_info: Record<string, string | boolean>;
  mfa_secret: string | null; mfa_last_step: number | string | null; created_at: Date; updated_at: Date;
}

const toUser = (r: Row): UserRecord => ({
  id: r.id,
  username: r.username,
  passwordHash: r.password_hash,
  accountInfo: r.account_info ?? {},
  mfaSecret: r.mfa_secret,
  mfaLastStep: r.mfa_last_step === null ? null : Number(r.mfa_last_step),
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

export function createUsersRepository(db: Queryable) {
  return {
    /** Inserts a user; returns false when the username is taken (any case). */
    async insert(u: UserRecord, q: Queryable = db): Promise<boolean> {
      const rows = await q.query(
        `INSERT INTO users (id, username, password_hash, account_info, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT ((lower(username))) DO NOTHING RETURNING id`,
        [u.id, u.username, u.passwordHash, JSON.stringify(u.accountInfo), u.createdAt],
      );
      return rows.length === 1;
    },
    async findById(id: string, q: Queryable = db): Promise<UserRecord | undefined> {
      const rows = await q.query<Row>('SELECT * FROM users WHERE id = $1', [id]);
      return rows[0] && toUser(rows[0]);
    },
    async findByUsername(username: string, q: Queryable = db): Promise<UserRecord | undefined> {
      const rows = await q.query<Row>('SELECT * FROM users WHERE lower(username) = lower($1)', [username]);
      return rows[0] && toUser(rows[0]);
    },
    async update(id: string, change: { username?: string; passwordHash?: string; accountInfo?: Record<string, string | boolean> }, at: Date, q: Queryable = db): Promise<'ok' | 'taken'> {
      try {
        await q.query(
          `UPDATE users SET username = COALESCE($2, username), password_hash = COALESCE($3, password_hash),
             account_info = COALESCE($4, account_info), updated_at = $5 WHERE id = $1`,
          [id, change.username ?? null, change.passwordHash ?? null, change.accountInfo ? JSON.stringify(change.accountInfo) : null, at],
        );
        return 'ok';
      } catch (err) {
        if ((err as { code?: string }).code === '23505') return 'taken';
        throw err;
      }
    },
    async setMfa(id: string, secret: string | null, lastStep: number | null, at: Date, q: Queryable = db): Promise<void> {
      await q.query('UPDATE users SET mfa_secret = $2, mfa_last_step = $3, updated_at = $4 WHERE id = $1', [id, secret, lastStep, at]);
    },
    /** Records the step of an accepted code, only if it is newer (so a code cannot be replayed concurrently). */
    async advanceMfaStep(id: string, step: number, q: Queryable = db): Promise<boolean> {
      const rows = await q.query('UPDATE users SET mfa_last_step = $2 WHERE id = $1 AND (mfa_last_step IS NULL OR mfa_last_step < $2) RETURNING id', [id, step]);
      return rows.length === 1;
    },
    /** Within the transaction that removes the account's clients and tokens. */
    async delete(id: string, tx: Tx): Promise<void> {
      await tx.query('DELETE FROM users WHERE id = $1', [id]);
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;
