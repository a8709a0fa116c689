/**
 * RSAES-PKCS1-v1_5 encryption (RFC 8017 §7.2.1) with the device's public key, in the page.
 *
 * The device's setup protocol wants the Wi-Fi password encrypted this way (Particle's firmware
 * decrypts it with its private key). WebCrypto offers RSA-OAEP only, so the few steps are done
 * here with BigInt: read the key, pad the message, raise it to the public exponent.
 *
 * Plain ES module JavaScript with no dependency: it runs in the browser and in Node (20+) alike.
 */

const RSA_ENCRYPTION_OID = '2a864886f70d010101'; // 1.2.840.113549.1.1.1, DER-encoded
const SEQUENCE = 0x30;
const INTEGER = 0x02;
const BIT_STRING = 0x03;
const NULL = 0x05;
const OID = 0x06;

/** Bytes from a hex string; throws on anything that is not an even run of hex digits. */
export function fromHex(hex) {
  if (typeof hex !== 'string' || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new Error('the public key is not a hex string');
  }
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** A hex string of the bytes, two lowercase digits each. */
export function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * One DER element at `at` (X.690 §8.1): its tag, and where its contents start and end. Lengths
 * are the short form (one byte below 128) or the long form (0x80 + the count of length bytes).
 */
function element(bytes, at, expectedTag, end = bytes.length) {
  if (at + 2 > end) throw new Error('the public key is cut short');
  const tag = bytes[at];
  if (tag !== expectedTag) throw new Error(`the public key is malformed (tag 0x${tag.toString(16)} where 0x${expectedTag.toString(16)} was expected)`);
  let length = bytes[at + 1];
  let start = at + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    // 1 to 4 length bytes are plenty for a key; 0 would be BER's indefinite length, not DER.
    if (count === 0 || count > 4 || start + count > end) throw new Error('the public key has a malformed length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[start++];
  }
  if (start + length > end) throw new Error('the public key is cut short');
  return { start, end: start + length };
}

/** A DER INTEGER's contents as a non-negative BigInt (a leading 0x00 only keeps the sign bit clear). */
function unsigned(bytes, { start, end }) {
  if (start === end || bytes[start] & 0x80) throw new Error('the public key holds a negative or empty number');
  return BigInt(`0x${toHex(bytes.subarray(start, end))}`);
}

/**
 * The RSA public key in `hex`: a DER SubjectPublicKeyInfo (RFC 5280 §4.1, RFC 8017 §A.1.1)
 *
 *   SEQUENCE {
 *     SEQUENCE { OBJECT IDENTIFIER rsaEncryption, NULL }
 *     BIT STRING { 0 unused bits, SEQUENCE { INTEGER modulus, INTEGER publicExponent } }
 *   }
 *
 * The device sends it zero-padded to a fixed length (294 bytes, a 2048-bit key's size, for its
 * 1024-bit key): whatever follows the outer SEQUENCE must be zeros. Answers the modulus `n`,
 * the exponent `e` and the key's length in bytes `size`.
 */
export function parsePublicKey(hex) {
  const der = fromHex(hex);
  const outer = element(der, 0, SEQUENCE);
  if (der.subarray(outer.end).some((b) => b !== 0)) throw new Error('the public key has bytes after its end');

  const algorithm = element(der, outer.start, SEQUENCE, outer.end);
  const oid = element(der, algorithm.start, OID, algorithm.end);
  if (toHex(der.subarray(oid.start, oid.end)) !== RSA_ENCRYPTION_OID) throw new Error('the public key is not an RSA key');
  // The parameters are NULL for rsaEncryption; some encoders leave them out.
  if (oid.end < algorithm.end) element(der, oid.end, NULL, algorithm.end);

  const bits = element(der, algorithm.end, BIT_STRING, outer.end);
  if (der[bits.start] !== 0) throw new Error('the public key\'s bit string has unused bits');
  const rsaKey = element(der, bits.start + 1, SEQUENCE, bits.end);
  const modulus = element(der, rsaKey.start, INTEGER, rsaKey.end);
  const exponent = element(der, modulus.end, INTEGER, rsaKey.end);

  const n = unsigned(der, modulus);
  const e = unsigned(der, exponent);
  // The key's length in bytes (k in RFC 8017): the modulus's, without DER's sign byte.
  const size = Math.ceil(n.toString(16).length / 2);
  if (size < 64) throw new Error('the public key is too short');
  return { n, e, size };
}

/** base^exponent mod modulus, by square-and-multiply over the exponent's bits. */
export function modPow(base, exponent, modulus) {
  let result = 1n;
  let b = base % modulus;
  for (let x = exponent; x > 0n; x >>= 1n) {
    if (x & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
  }
  return result;
}

/** `count` random bytes, none of them zero (the padding string PS must hold no zero). */
function nonZeroRandomBytes(count) {
  const bytes = new Uint8Array(count);
  crypto.getRandomValues(bytes);
  const one = new Uint8Array(1);
  for (let i = 0; i < count; i++) {
    while (bytes[i] === 0) {
      crypto.getRandomValues(one);
      bytes[i] = one[0];
    }
  }
  return bytes;
}

/**
 * `message` (a string, sent as UTF-8) encrypted with the key `publicKeyHex` (as parsePublicKey
 * reads it): RSAES-PKCS1-v1_5, the ciphertext as hex of the key's length (256 digits for 1024
 * bits). The encoded message is
 *
 *   EM = 0x00 || 0x02 || PS || 0x00 || M     (PS: at least 8 random non-zero bytes)
 *
 * read as a big-endian number m; the ciphertext is m^e mod n.
 */
export function encrypt(publicKeyHex, message) {
  const { n, e, size } = parsePublicKey(publicKeyHex);
  const m = new TextEncoder().encode(message);
  if (m.length > size - 11) throw new Error(`the message is too long for the key (at most ${size - 11} bytes)`);

  const em = new Uint8Array(size);
  em[1] = 0x02;
  em.set(nonZeroRandomBytes(size - m.length - 3), 2);
  em.set(m, size - m.length); // the 0x00 separator before it is already there
  const c = modPow(BigInt(`0x${toHex(em)}`), e, n);
  return c.toString(16).padStart(size * 2, '0');
}
