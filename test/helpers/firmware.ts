import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import reader from 'binary-version-reader';
import { raw, type RawResponse } from './http.js';
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
