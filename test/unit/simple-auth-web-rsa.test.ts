import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, createPublicKey, generateKeyPairSync, privateDecrypt, type JsonWebKey, type KeyObject } from 'node:crypto';
import { importWebExample } from '../helpers/web-example.js';

/**
 * The web setup page's RSA (examples/simple-auth-web/rsa.js): what it encrypts, the holder of the
 * private key reads back as RSAES-PKCS1-v1_5 (RFC 8017 §7.2). Node 20 refuses PKCS#1 v1.5
 * decryption, so the test decrypts with no padding and checks the encoded message itself.
 */
interface Rsa {
  parsePublicKey(hex: string): { n: bigint; e: bigint; size: number };
  encrypt(publicKeyHex: string, message: string): string;
  modPow(base: bigint, exponent: bigint, modulus: bigint): bigint;
}
const rsa = await importWebExample<Rsa>('rsa.js');

/** A key pair and its public key as the device sends it: DER SubjectPublicKeyInfo zero-padded to 294 bytes, hex. */
function deviceKey(bits = 1024): { hex: string; privateKey: KeyObject; publicKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const padded = Buffer.concat([der, Buffer.alloc(Math.max(0, 294 - der.length))]);
  return { hex: padded.toString('hex'), privateKey, publicKey };
}

/**
 * The key's JWK, from a copy of the key: on Node 20, exporting a JWK from a key that
 * generateKeyPairSync made can deadlock when the garbage collector frees the key's generation job
 * during the export (both take the key's lock).
 */
const jwkOf = (k: KeyObject): JsonWebKey => createPublicKey({ key: k.export({ type: 'spki', format: 'der' }), format: 'der', type: 'spki' }).export({ format: 'jwk' });

/** The encoded message EM = 0x00 0x02 PS 0x00 M, checked; answers M. */
function unpad(em: Buffer, size: number): Buffer {
  assert.equal(em.length, size);
  assert.equal(em[0], 0x00, 'EM starts 0x00');
  assert.equal(em[1], 0x02, 'block type 2');
  const separator = em.indexOf(0x00, 2);
  assert.ok(separator >= 10, `at least 8 padding bytes, all non-zero (separator at ${separator})`);
  return em.subarray(separator + 1);
}

const key = deviceKey();

test('a 1024-bit key padded to 294 bytes: the modulus and exponent are read from the DER, not from offsets', () => {
  const parsed = rsa.parsePublicKey(key.hex);
  const jwk = jwkOf(key.publicKey);
  const big = (b64url: string | undefined) => BigInt(`0x${Buffer.from(b64url ?? '', 'base64url').toString('hex')}`);
  assert.equal(parsed.n, big(jwk.n));
  assert.equal(parsed.e, big(jwk.e));
  assert.equal(parsed.size, 128);
  // A 2048-bit key (294 bytes with no padding) has its parts elsewhere; it is read as well.
  const larger = deviceKey(2048);
  assert.equal(rsa.parsePublicKey(larger.hex).size, 256);
  assert.equal(rsa.parsePublicKey(larger.hex).n, big(jwkOf(larger.publicKey).n));
});

test('what it encrypts decrypts to PKCS#1 v1.5 type 2 padding around the message, as hex of the key\'s length', () => {
  for (const message of ['correct horse', 'pässwörd ☂', 'x']) {
    const hex = rsa.encrypt(key.hex, message);
    assert.match(hex, /^[0-9a-f]{256}$/);
    const em = privateDecrypt({ key: key.privateKey, padding: constants.RSA_NO_PADDING }, Buffer.from(hex, 'hex'));
    assert.equal(unpad(em, 128).toString('utf8'), message);
  }
  // The padding is random: the same password never gives the same ciphertext.
  assert.notEqual(rsa.encrypt(key.hex, 'correct horse'), rsa.encrypt(key.hex, 'correct horse'));
  // The longest message the key takes is k - 11 bytes; one more is refused.
  const longest = 'a'.repeat(117);
  const em = privateDecrypt({ key: key.privateKey, padding: constants.RSA_NO_PADDING }, Buffer.from(rsa.encrypt(key.hex, longest), 'hex'));
  assert.equal(unpad(em, 128).toString(), longest);
  assert.throws(() => rsa.encrypt(key.hex, 'a'.repeat(118)), /too long/);
});

test('a key that is not what the device should send is refused with a reason', () => {
  const der = Buffer.from(key.hex, 'hex');
  const spkiLength = 162;
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'der' }).toString('hex');
  const withTrailing = Buffer.from(der);
  withTrailing[200] = 1;
  for (const [bad, reason] of [
    ['not hex', /not a hex string/],
    ['abc', /not a hex string/],
    ['', /cut short/],
    [der.subarray(0, spkiLength - 1).toString('hex'), /cut short/],
    [withTrailing.toString('hex'), /after its end/],
    [ec, /not an RSA key/],
    ['3003020101', /malformed/],
  ] as const) {
    assert.throws(() => rsa.parsePublicKey(bad), reason, bad.slice(0, 20));
    assert.throws(() => rsa.encrypt(bad, 'secret'), reason);
  }
});

test('modPow agrees with small numbers worked by hand', () => {
  assert.equal(rsa.modPow(4n, 13n, 497n), 445n);
  assert.equal(rsa.modPow(2n, 0n, 7n), 1n);
  assert.equal(rsa.modPow(10n, 1n, 7n), 3n);
});
