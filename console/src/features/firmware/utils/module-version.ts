/**
 * The product version a Particle module binary carries in its suffix (PRODUCT_VERSION), read in
 * the browser to fill the upload's version field; null when the file does not carry one. The
 * suffix is read from the end as Particle's binary-version-reader reads it: the CRC-32 (4 bytes),
 * the suffix size (2), the SHA-256 (32), a reserved u16, then the product version and the product
 * id (u16 each, little-endian). The server checks the whole module; this is only a convenience.
 */
const SUFFIX_WITH_PRODUCT = 40;
const NO_PRODUCT = 0xffff;

export function productVersionOf(bytes: ArrayBuffer): number | null {
  const view = new DataView(bytes);
  if (bytes.byteLength < 24 + SUFFIX_WITH_PRODUCT + 4) return null;
  const end = bytes.byteLength - 4;
  const suffixSize = view.getUint16(end - 2, true);
  if (suffixSize < SUFFIX_WITH_PRODUCT || suffixSize > end) return null;
  const version = view.getUint16(end - 2 - 32 - 2 - 2, true);
  return version === NO_PRODUCT || version === 0 ? null : version;
}
