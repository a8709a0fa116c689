import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomFillSync, randomInt, timingSafeEqual } from 'node:crypto';
import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';

/**
 * Random secrets and their hashes.
 *
 * Access tokens, refresh tokens, client secrets, MFA tokens and recovery codes are random values of
 * at least 128 bits, so a single SHA-256 is a sound way to store them: nothing can be guessed from
 * the hash, and lookups by hash stay cheap enough for the hot path of token issuance and
 * verification. Passwords are chosen by people, so they get argon2id (RFC 9106) instead.
 */
export interface Secrets {
  /** A new opaque token: `bytes` random bytes, hex (or base64url) encoded. */
  token(bytes?: number, encoding?: 'hex' | 'base64url'): string;
  /** A number with exactly `digits` decimal digits. */
  digits(digits: number): string;
  /** `length` characters drawn uniformly from `alphabet` (at most 256 characters). */
  text(length: number, alphabet: string): string;
  /** A random UUID (RFC 9562, version 4). */
  uuid(): string;
  sha256(value: string): string;
  /** Constant-time equality of two hex digests. */
  sameDigest(a: string, b: string): boolean;
  hashPassword(password: string): Promise<string>;
  /**
   * Whether `password` matches `hash`. With no hash (an unknown account, a customer without a
   * password) it is false, after the same argon2 work, so that timing does not tell which
   * accounts exist.
   */
  verifyPassword(hash: string | null, password: string): Promise<boolean>;
}

/**
 * SHA-256 as hex. `crypto.hash` (Node 20.12+) hashes in one call, cheaper than
 * createHash().update().digest() for a token (docs/benchmarks.md,
 * "Measurements behind design choices"); it runs on every authenticated request.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
export const sha256: (value: string) => string = oneShot
  ? (value) => oneShot('sha256', value, 'hex')
  : (value) => createHash('sha256').update(value, 'utf8').digest('hex');

/** Whether two hex digests are the same, compared in constant time; an empty one matches nothing. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/**
 * `bytes` random bytes from the CSPRNG, as hex or base64url text. A randomBytes() call costs the
 * same whatever its size (OpenSSL's per-call overhead), as much as the rest of issuing a token
 * (docs/benchmarks.md, "Measurements behind design choices"), so bytes are drawn 4 KiB at a time,
 * as Node does for randomUUID(). Bytes once handed out are zeroed in the pool, so a token does not
 * linger in it.
 */
const pool = Buffer.alloc(4096);
let drawn = pool.length;

export function randomText(bytes: number, encoding: 'hex' | 'base64url' = 'hex'): string {
  if (bytes > 256) return randomBytes(bytes).toString(encoding);
  if (drawn + bytes > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  const text = pool.toString(encoding, drawn, drawn + bytes);
  pool.fill(0, drawn, drawn + bytes);
  drawn += bytes;
  return text;
}

/** argon2id parameters: OWASP's second recommended set (19 MiB, 2 passes, 1 lane). */
const ARGON2 = { memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function createSecrets(options: { fastPasswordHashing?: boolean } = {}): Secrets {
  // Test suites may lower the argon2 cost; production never sets this.
  const params = options.fastPasswordHashing ? { memoryCost: 1024, timeCost: 1, parallelism: 1 } : ARGON2;
  let dummyHash: Promise<string> | undefined;
  return {
    token: (bytes = 20, encoding = 'hex') => randomText(bytes, encoding),
    digits(n) {
      let out = '';
      for (let i = 0; i < n; i++) out += String(randomInt(10));
      return out;
    },
    text(length, alphabet) {
      let out = '';
      for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)] as string;
      return out;
    },
    uuid: () => crypto.randomUUID(),
    sha256,
    sameDigest,
    hashPassword: (password) => argon2Hash(password, { ...params, algorithm: 2 }),
    async verifyPassword(hash, password) {
      const against = hash ?? (await (dummyHash ??= argon2Hash(randomBytes(20).toString('hex'), { ...params, algorithm: 2 })));
      try {
        return (await argon2Verify(against, password)) && hash !== null;
      } catch {
        return false;
      }
    },
  };
}
