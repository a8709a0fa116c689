import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import mqtt from 'mqtt';
import reader from 'binary-version-reader';
import type { Bus } from '../../src/bus/bus.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../../src/services/firmware/index.js';
import type { FirmwareSource, FirmwareTarget } from '../../src/services/firmware/updates/source.js';
import { raw, type RawResponse } from './http.js';
import { newProduct, signUp } from './fixtures.js';
import type { Identity } from './device.js';
import { eventually } from './eventually.js';

/**
 * Product firmware for tests: valid module binaries made by binary-version-reader's own test
 * helper (a product id, a product version and a platform in the module suffix and prefix, a
 * CRC-32 that holds), and their upload as particle-api-js sends it.
 */
export function firmwareBinary(productId: number, version: number, options: { platformId?: number; dataSize?: number; moduleFunction?: number } = {}): Buffer {
  return reader.firmwareTestHelper.createFirmwareBinary({
    productId, productVersion: version, platformId: options.platformId ?? 26, dataSize: options.dataSize ?? 1024,
    ...(options.moduleFunction === undefined ? {} : { moduleFunction: options.moduleFunction }),
  });
}

/** POST /v1/products/:p/firmware as multipart: the binary as `field` (file, by default) and the text fields. */
export function upload(url: string, token: string, productId: number, image: Buffer, fields: Record<string, string>, field = 'file'): Promise<RawResponse> {
  const form = new FormData();
  form.append(field, new Blob([image]), 'firmware.bin');
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return raw(`${url}/v1/products/${productId}/firmware`, { method: 'POST', token, body: form });
}

/** Uploads a valid version; answers its record. */
export async function uploaded(url: string, token: string, productId: number, version: number, extra: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const r = await upload(url, token, productId, firmwareBinary(productId, version), { version: String(version), title: `v${version}`, ...extra });
  assert.equal(r.status, 201, r.text);
  return r.json as Record<string, unknown>;
}

/** A device that connects, says it runs `version` of its product firmware, and hangs up once the cloud shows it. */
export async function reportVersion(url: string, mqttUrl: string, token: string, productId: number, who: Identity, version: number): Promise<void> {
  const client = await mqtt.connectAsync(mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  await client.publishAsync(`devices/${who.id}/hello`, JSON.stringify({ functions: [], variables: {}, firmware_version: version, system_firmware_version: '5.8.0' }), { qos: 1 });
  await eventually(async () => {
    const r = await raw(`${url}/v1/products/${productId}/devices/${who.id}`, { token });
    return r.json?.firmware_version === version ? true : undefined;
  }, 5000, `device ${who.id} reported version ${version}`);
  await client.endAsync();
}

/** The calls the firmware and group tests make: a JSON request with a token, and what its answer must be. */
export function apiCalls(server: () => { url: string }) {
  const call = (method: string, path: string, token: string, json?: unknown): Promise<RawResponse> =>
    raw(`${server().url}${path}`, { method, token, ...(json === undefined ? {} : { json }) });
  async function ok(r: Promise<RawResponse>, status = 200): Promise<RawResponse> {
    const res = await r;
    assert.equal(res.status, status, res.text);
    return res;
  }
  /** A refusal with its status, its `error` and, when given, what its description says. */
  async function refused(r: Promise<RawResponse>, status: number, error: string, text?: RegExp): Promise<RawResponse> {
    const res = await r;
    assert.equal(res.status, status, res.text);
    assert.equal(res.json.error, error, res.text);
    if (text) assert.match(res.json.error_description, text);
    return res;
  }
  /** A user and a product of theirs. */
  async function team() {
    const { token, username } = await signUp(server().url);
    const product = await newProduct(server().url, token);
    return { token, username, product, base: `/v1/products/${product.id}` };
  }
  return { call, ok, refused, team };
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

export function signingKeys(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

/**
 * What product firmware would answer, set by the test, for the transfer's tests: the version each
 * device should run and the images. `loads` counts the images read (a node holds each once).
 * `released` tells the nodes, as the product firmware's bus notice does.
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
      bus.notify(FIRMWARE_RELEASED, { productId, deviceIds, immediate, cause: 'release' } satisfies FirmwareReleased);
    },
  };
}
