import { DomainError } from '../../../domain/errors.js';

/** The release a device should run, as the product's firmware decides it (Particle's rules). */
export interface FirmwareTarget {
  productId: number;
  version: number;
  /** Of the whole image, hex. */
  sha256: string;
  size: number;
  /** Ed25519 signature of the image when the product signs its firmware. */
  signature: Buffer | null;
}

/**
 * Where updates take their targets and images from: the product firmware service (releases,
 * groups, locks). A port, so that the transfer works against any source; tests give their own.
 */
export interface FirmwareSource {
  targetFor(deviceId: string): Promise<FirmwareTarget | null>;
  image(productId: number, version: number): Promise<Buffer>;
}

/** The source of a cloud with no product firmware: no device is ever targeted. */
export const noFirmware: FirmwareSource = {
  targetFor: async () => null,
  image: async (productId, version) => { throw new DomainError('not_found', `Product ${productId} has no firmware version ${version}`); },
};
