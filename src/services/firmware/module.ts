import { DomainError } from '../../domain/errors.js';

/**
 * A thin typed wrapper of Particle's binary-version-reader (HalModuleParser): what Skyport reads
 * of an uploaded binary, and the checks an upload must pass (docs/firmware.md, "Module checks").
 * The format: a 24-byte prefix (addresses, flags, module version, platform id, module function),
 * and a suffix read from the end (CRC-32 of everything before it, suffix size, SHA-256, product
 * version and product id, each a u16).
 */
type Reader = typeof import('binary-version-reader').default;
let loading: Promise<Reader> | undefined;
/**
 * The reader is loaded when a binary is first read: with its protobuf definitions it takes about
 * a quarter of a second to load, which neither the server's start nor the CLI's other commands
 * should pay.
 */
const reader = (): Promise<Reader> => (loading ??= import('binary-version-reader').then((m) => m.default));

const NO_FUNCTION = 0;

export interface FirmwareModule {
  platformId: number;
  moduleFunction: number;
  moduleVersion: number;
  /** The suffix's product id (its low 16 bits), or null when the suffix carries no product fields. */
  productId: number | null;
  productVersion: number | null;
  crc: { ok: boolean; stored: string; computed: string };
}

/** Reads a binary's module fields; null when it is not a module at all. */
export async function readModule(image: Buffer): Promise<FirmwareModule | null> {
  const { HalModuleParser, ModuleInfo } = await reader();
  // A prefix, the smallest suffix, and the CRC: anything shorter is no module.
  if (image.length < ModuleInfo.MODULE_PREFIX_SIZE + ModuleInfo.MIN_MODULE_SUFFIX_SIZE + 4) return null;
  try {
    const m = await new HalModuleParser().parseBuffer({ fileBuffer: image });
    // The parser takes the likeliest prefix it finds, even in a file that has none: a module's
    // prefix spans it (end after start, within the file) and names a module function.
    const start = parseInt(m.prefixInfo.moduleStartAddy, 16);
    const end = parseInt(m.prefixInfo.moduleEndAddy, 16);
    if (!(end > start && end - start + 4 <= image.length) || m.prefixInfo.moduleFunction === NO_FUNCTION) return null;
    const s = m.suffixInfo;
    // -1: a suffix too small for the product fields; 0xffff: a module built for no product.
    const product = s.productId < 0 || s.productId === 0xffff ? null : s.productId;
    return {
      platformId: m.prefixInfo.platformID,
      moduleFunction: m.prefixInfo.moduleFunction,
      moduleVersion: m.prefixInfo.moduleVersion,
      productId: product,
      productVersion: product === null ? null : s.productVersion,
      crc: { ok: m.crc.ok, stored: m.crc.storedCrc, computed: m.crc.actualCrc },
    };
  } catch {
    // The parser reads offsets the file gives: a file that is no module can send it out of bounds.
    return null;
  }
}

export type ModuleProblem = 'format' | 'crc' | 'module_function' | 'platform' | 'product_id' | 'product_version';

const refused = (reason: ModuleProblem, message: string) => new DomainError('invalid_firmware', message, { details: { reason } });

/**
 * The checks of an upload, in this order: a module at all, its CRC-32, application firmware, the
 * product's platform, the product's id (its low 16 bits, as the suffix holds them), the version
 * given. Throws `invalid_firmware` naming the first that fails (`reason`).
 */
export async function checkModule(image: Buffer, expected: { productId: number; platformId: number; version: number }): Promise<FirmwareModule> {
  const m = await readModule(image);
  /** Application firmware: the only module function a product releases. */
  const USER_PART = (await reader()).ModuleInfo.FunctionType.USER_PART;
  if (!m) throw refused('format', 'The file is not a Particle module binary (no module prefix and suffix found): upload the .bin the compiler made');
  if (!m.crc.ok) throw refused('crc', `The binary's CRC-32 does not hold (stored ${m.crc.stored}, computed ${m.crc.computed}): the file is damaged or truncated`);
  if (m.moduleFunction !== USER_PART) throw refused('module_function', `The module is not application firmware (module function ${m.moduleFunction}; application firmware is ${USER_PART}): a product releases application firmware only`);
  if (m.platformId !== expected.platformId) throw refused('platform', `The binary is built for platform ${m.platformId}; this product's devices are platform ${expected.platformId}`);
  const product = expected.productId & 0xffff;
  if (m.productId === null) throw refused('product_id', `The binary names no product: build it with PRODUCT_ID(${expected.productId}) and PRODUCT_VERSION(${expected.version})`);
  if (m.productId !== product) throw refused('product_id', `The binary's module suffix names product ${m.productId}; this is product ${expected.productId}`);
  if (m.productVersion !== expected.version) throw refused('product_version', `The binary's module suffix says product version ${m.productVersion}; the upload says version ${expected.version}`);
  return m;
}
