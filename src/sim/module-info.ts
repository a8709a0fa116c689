import { createRequire } from 'node:module';

/** What this simulator reads of Particle's module format (binary-version-reader has no types of its own). */
interface ModuleReader {
  HalModuleParser: new () => {
    parseBuffer(info: { fileBuffer: Buffer }): Promise<{ crc: { ok: boolean }; suffixInfo: { productId: number; productVersion: number } }>;
  };
}

let reader: ModuleReader | undefined;

/**
 * The product firmware version in a binary's module suffix (Particle's `PRODUCT_VERSION`), read
 * with Particle's own parser; null when the image is not a module whose CRC-32 holds, or carries
 * no product version.
 */
export async function productVersionOf(image: Buffer): Promise<number | null> {
  // Loaded on the first update, not with every simulated device.
  reader ??= createRequire(import.meta.url)('binary-version-reader') as ModuleReader;
  try {
    const info = await new reader.HalModuleParser().parseBuffer({ fileBuffer: image });
    const version = info.suffixInfo.productVersion;
    return info.crc.ok && version >= 0 && version < 0xffff ? version : null;
  } catch {
    return null;
  }
}
