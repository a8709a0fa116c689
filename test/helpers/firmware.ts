import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import reader from 'binary-version-reader';
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
