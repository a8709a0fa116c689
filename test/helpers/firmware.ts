import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Bus } from '../../src/bus/bus.js';
import { RELEASED_TOPIC } from '../../src/services/firmware/updates/index.js';
import type { FirmwareSource, FirmwareTarget } from '../../src/services/firmware/updates/source.js';

interface TestHelper { createFirmwareBinary(o: { productId: number; productVersion: number; platformId: number; dataSize: number }): Buffer }
const { firmwareTestHelper } = createRequire(import.meta.url)('binary-version-reader') as { firmwareTestHelper: TestHelper };

/** A valid Particle module binary (binary-version-reader's test helper) of about `dataSize` bytes. */
export function moduleBinary(productId: number, productVersion: number, dataSize = 20_000, platformId = 26): Buffer {
  return firmwareTestHelper.createFirmwareBinary({ productId, productVersion, platformId, dataSize });
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

export function signingKeys(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

/**
 * What product firmware would answer, set by the test: the version each device should run and
 * the images. `loads` counts the images read (a node holds each once). `release` tells the
 * nodes, as the product firmware's bus notice does.
 */
export function testFirmware() {
  const targets = new Map<string, FirmwareTarget>();
  const images = new Map<string, Buffer>();
  const loads: string[] = [];
  const source: FirmwareSource = {
    targetFor: async (id) => targets.get(id) ?? null,
    async image(productId, version) {
      loads.push(`${productId}/${version}`);
      const image = images.get(`${productId}/${version}`);
      if (!image) throw new Error(`no image ${productId}/${version}`);
      return image;
    },
  };
  return {
    source,
    loads,
    /** Targets `devices` at `version` of `image`; signed with `key` (or a wrong `signature`) when given. */
    target(devices: string[], productId: number, version: number, image: Buffer, options: { key?: KeyObject; signature?: Buffer } = {}): FirmwareTarget {
      images.set(`${productId}/${version}`, image);
      const signature = options.signature ?? (options.key ? sign(null, image, options.key) : null);
      const target: FirmwareTarget = { productId, version, sha256: sha256(image), size: image.length, signature };
      for (const id of devices) targets.set(id, target);
      return target;
    },
    /** The product firmware's notice that what devices should run changed (`immediate`: at once, not at their next connection). */
    released(bus: Bus, productId: number, deviceIds: string[] | null = null, immediate = true): void {
      bus.notify(RELEASED_TOPIC, { productId, deviceIds, immediate, cause: 'release' });
    },
  };
}
