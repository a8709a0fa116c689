import type { FirmwareTarget } from '../targets.js';

export type { FirmwareTarget };

/**
 * Where updates take their targets and images from: the product firmware (releases, groups,
 * locks: ../targets.ts). A port of the two functions the transfer needs, so that it works against
 * any source; tests give their own.
 */
export interface FirmwareSource {
  targetFor(deviceId: string): Promise<FirmwareTarget | null>;
  image(productId: number, version: number): Promise<Buffer>;
}
