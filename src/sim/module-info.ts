/**
 * The product firmware version in a binary's module suffix (Particle's `PRODUCT_VERSION`), read
 * with Particle's own parser; null when the image is not a module whose CRC-32 holds, or carries
 * no product version.
 */
export async function productVersionOf(image: Buffer): Promise<number | null> {
  // Loaded on the first update, not with every simulated device.
  const { default: reader } = await import('binary-version-reader');
  try {
    const info = await new reader.HalModuleParser().parseBuffer({ fileBuffer: image });
    const version = info.suffixInfo.productVersion;
    return info.crc.ok && version >= 0 && version < 0xffff ? version : null;
  } catch {
    return null;
  }
}
