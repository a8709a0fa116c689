import assert from 'node:assert/strict';
import { createDevice, type Device } from '../../src/sdk/index.js';
import { NO_FAILURES, emptyTally, simulateUpdates, type UpdateFailures } from '../../src/sim/updates.js';
import { raw, type RawResponse } from './http.js';
import { eventually } from './eventually.js';
import { uploaded } from './firmware.js';
import { provision, type Identity } from './device.js';
import { newProduct, signUp } from './fixtures.js';

/**
 * Staged rollouts for tests: a product with versions uploaded and devices provisioned, devices
 * that take updates as the simulator does (apply, refuse, fail the check), and the rollout's
 * answers read through the API.
 */

/** What a simulated device does with an update: applies it, or fails it in one of the simulator's ways. */
export type Fate = 'apply' | keyof UpdateFailures;

/** An SDK device running `version` that takes updates as `skyport sim` does, with the given fate (always). */
export function updatingDevice(mqttUrl: string, who: Identity, version: number, fate: Fate = 'apply'): Device {
  const device = createDevice({ url: mqttUrl, id: who.id, secret: who.secret, firmwareVersion: version, reconnect: { minMs: 20, maxMs: 100 } });
  const failures = fate === 'apply' ? NO_FAILURES : { ...NO_FAILURES, [fate]: 1 };
  simulateUpdates(device, failures, emptyTally(), () => 0);
  return device;
}

/** A user, a product with firmware `versions` uploaded, and `n` devices provisioned. */
export async function rolloutProduct(url: string, n: number, versions: number[] = [1, 2]) {
  const { token } = await signUp(url);
  const product = await newProduct(url, token);
  for (const v of versions) await uploaded(url, token, product.id, v);
  const devices: Identity[] = [];
  for (let i = 0; i < n; i++) devices.push(await provision(url, token, product.id));
  const base = `/v1/products/${product.id}`;
  const call = async (method: string, path: string, json?: unknown, status = 200): Promise<RawResponse> => {
    const r = await raw(`${url}${base}${path}`, { method, token, ...(json === undefined ? {} : { json }) });
    assert.equal(r.status, status, r.text);
    return r;
  };
  return { token, product, devices, base, call };
}

export type RolloutProduct = Awaited<ReturnType<typeof rolloutProduct>>;

/** Sets devices' groups (creating them). */
export async function inGroup(p: RolloutProduct, ids: string[], group: string): Promise<void> {
  for (const id of ids) await p.call('PUT', `/devices/${id}`, { groups: [group] });
}

/** Waits until every device of `ids` runs `version`, as the cloud counts it. */
export async function updatedTo(p: RolloutProduct, ids: string[], version: number, url: string, ms = 15_000): Promise<void> {
  await eventually(async () => {
    for (const id of ids) {
      const r = await raw(`${url}${p.base}/devices/${id}`, { token: p.token });
      if (r.json?.firmware_version !== version) return undefined;
    }
    return true;
  }, ms, `devices ${ids.join(', ')} on version ${version}`);
}
