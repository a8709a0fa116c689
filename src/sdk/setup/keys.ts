import { constants, generateKeyPairSync, privateDecrypt, type KeyObject } from 'node:crypto';

/**
 * The device's setup key: RSA-1024, as Particle's Wi-Fi firmware has. An app reads the public half
 * with `public-key` and encrypts the Wi-Fi password with it (RSA PKCS#1 v1.5, RFC 8017 §7.2), so
 * that the password never crosses the open setup network in clear.
 */
export interface SetupKey {
  /** `public-key`'s `b`: the DER SubjectPublicKeyInfo, zero-padded to 294 bytes as the firmware sends it. */
  publicKeyHex: string;
  /** The plain text of an encrypted password, or an Error saying why not. */
  decrypt(hex: string): Buffer | Error;
}

/** The firmware keeps the key in a 294-byte buffer and sends all of it; clients read the DER inside. */
const PUBLIC_KEY_BYTES = 294;

export function createSetupKey(): SetupKey {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const padded = Buffer.alloc(PUBLIC_KEY_BYTES);
  der.copy(padded);
  return { publicKeyHex: padded.toString('hex'), decrypt: (hex) => decrypt(privateKey, hex) };
}

const KEY_BYTES = 128;

function decrypt(privateKey: KeyObject, hex: string): Buffer | Error {
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length !== KEY_BYTES * 2) {
    return new Error(`pwd must be ${KEY_BYTES * 2} hex characters: the password encrypted with the device's public key`);
  }
  let block: Buffer;
  try {
    // Node 20 refuses PKCS#1 v1.5 padding for private decryption (CVE-2023-46809): the raw RSA
    // operation is done by OpenSSL and the padding is removed here.
    block = privateDecrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, Buffer.from(hex, 'hex'));
  } catch {
    return new Error('pwd does not decrypt with the device\'s key');
  }
  return unpad(block) ?? new Error('pwd does not decrypt with the device\'s key (bad padding)');
}

/** EME-PKCS1-v1_5 decoding (RFC 8017 §7.2.2 step 3): 00 02, at least 8 non-zero bytes, 00, message. */
function unpad(block: Buffer): Buffer | undefined {
  if (block.length !== KEY_BYTES || block[0] !== 0x00 || block[1] !== 0x02) return undefined;
  const end = block.indexOf(0x00, 2);
  if (end < 10) return undefined;
  return block.subarray(end + 1);
}
