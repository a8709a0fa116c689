// Types for the parts of Particle's binary-version-reader (Apache-2.0) that Skyport uses; the
// package ships none. Field names are the package's own (lib/HalModuleParser.js).
declare module 'binary-version-reader' {
  interface PrefixInfo {
    moduleStartAddy: string;
    moduleEndAddy: string;
    moduleFlags: number;
    moduleVersion: number;
    platformID: number;
    moduleFunction: number;
    moduleIndex: number;
    depModuleFunction: number;
    depModuleIndex: number;
    depModuleVersion: number;
    prefixOffset: number;
  }
  interface SuffixInfo {
    /** The low 16 bits of the product id; -1 when the suffix has no product fields. */
    productId: number;
    productVersion: number;
    /** SHA-256 of the module (without its suffix), hex. */
    fwUniqueId: string;
    suffixSize: number;
    crcBlock: string;
  }
  interface ParsedModule {
    fileBuffer: Buffer;
    crc: { ok: boolean; storedCrc: string; actualCrc: string };
    prefixInfo: PrefixInfo;
    suffixInfo: SuffixInfo;
  }
  interface HalModuleParser {
    parseBuffer(fileInfo: { fileBuffer: Buffer }): Promise<ParsedModule>;
  }
  interface CreateFirmwareBinaryOptions {
    productId: number;
    productVersion: number;
    platformId: number;
    moduleFunction?: number;
    dataSize?: number;
  }
  const pkg: {
    HalModuleParser: new () => HalModuleParser;
    ModuleInfo: {
      FunctionType: { readonly USER_PART: number; readonly SYSTEM_PART: number; readonly BOOTLOADER: number; readonly MONO_FIRMWARE: number };
      MODULE_PREFIX_SIZE: number;
      MIN_MODULE_SUFFIX_SIZE: number;
    };
    /** lib/firmwareTestHelper.js: valid binaries for tests. */
    firmwareTestHelper: { createFirmwareBinary(options: CreateFirmwareBinaryOptions): Buffer };
  };
  export default pkg;
}
