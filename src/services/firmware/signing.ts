import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { DomainError } from '../../domain/errors.js';

/**
 * Firmware signing keys and signatures (docs/firmware.md, "Signed firmware"): a product's Ed25519
 * public key, and signatures of whole images that it verifies. node:crypto does both; the key is
 * stored as its raw 32 bytes.
 */

const refused = (message: string) => new DomainError('invalid_signature', message);

/** A public key as PEM (SPKI) or as base64 of its raw 32 bytes; answers the raw bytes. */
export function parsePublicKey(value: unknown): Buffer {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('invalid_request', 'public_key is required: an Ed25519 public key, as PEM or as base64 of its 32 bytes');
  const text = value.trim();
  // node:crypto derives the public key from a private one: refuse it rather than take it silently.
  if (/PRIVATE KEY-----/.test(text)) throw refused('public_key is a private key: keep it to yourself and send its public key (openssl pkey -pubout)');
  let key: KeyObject;
  try {
    if (text.startsWith('-----BEGIN')) {
      key = createPublicKey({ key: text, format: 'pem' });
    } else {
      const raw = strictBase64(text);
      if (raw?.length !== 32) throw refused('public_key in base64 must be the 32 bytes of an Ed25519 public key');
      key = keyOf(raw);
    }
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw refused('public_key is not a public key (PEM, or base64 of 32 bytes)');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw refused(`public_key is a${key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'ec' ? 'n' : ''} ${key.asymmetricKeyType ?? 'unknown'} key; firmware is signed with Ed25519`);
  return rawOf(key);
}

const keyOf = (raw: Buffer): KeyObject => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
const rawOf = (key: KeyObject): Buffer => Buffer.from((key.export({ format: 'jwk' }) as { x: string }).x, 'base64url');

/** The key as people exchange it (PEM) and as the SDK takes it (raw base64), with a fingerprint to compare. */
export function keyView(raw: Buffer): { public_key: string; public_key_base64: string; fingerprint: string } {
  return {
    public_key: keyOf(raw).export({ format: 'pem', type: 'spki' }).toString(),
    public_key_base64: raw.toString('base64'),
    fingerprint: `SHA256:${createHash('sha256').update(raw).digest('base64').replace(/=+$/, '')}`,
  };
}

/** Base64 (or base64url) text, or undefined when it is not. */
function strictBase64(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  return Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
}

/** A signature field: base64 of the 64 bytes of an Ed25519 signature. */
export function parseSignature(value: unknown): Buffer | null {
  if (value === undefined || value === null || value === '') return null;
  const raw = typeof value === 'string' ? strictBase64(value.trim()) : undefined;
  if (raw?.length !== 64) throw refused('signature must be base64 of the 64 bytes of an Ed25519 signature of the whole image');
  return raw;
}

/** Whether the key verifies the signature of the image. */
export function verifies(publicKey: Buffer, image: Buffer, signature: Buffer): boolean {
  try {
    return verify(null, image, keyOf(publicKey), signature);
  } catch {
    return false;
  }
}
