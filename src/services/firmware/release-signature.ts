import { DomainError } from '../../domain/errors.js';
import type { FirmwareRecord, FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { Tx } from '../../storage/db.js';
import { verifies } from './signing.js';

/**
 * With a signing key, a released image (by a release or a rollout) needs a signature the key
 * verifies: the one given, or the one stored (docs/firmware.md, "Signed firmware"). Answers the
 * signature to store with the release (null: keep what is stored).
 */
export async function releasedSignature(repo: FirmwareRepository, productId: number, f: FirmwareRecord, given: Buffer | null, tx: Tx): Promise<Buffer | null> {
  const key = await repo.signingKey(productId, tx);
  if (!key) return given;
  const signature = given ?? f.signature;
  if (!signature) throw new DomainError('invalid_signature', `The product has a firmware signing key and version ${f.version} was uploaded without a signature: send \`signature\`, base64 of the Ed25519 signature of the whole image`);
  const image = await repo.image(productId, f.version, tx);
  if (!image || !verifies(key.publicKey, image, signature)) {
    throw new DomainError('invalid_signature', `${given ? 'The signature' : `The signature stored with version ${f.version}`} is not the product's signing key's signature of the image${given ? '' : ': send `signature`'}`);
  }
  return signature;
}
