import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { raw } from './http.js';
import { newProduct, signUp } from './fixtures.js';
import type { Identity } from './device.js';
import type { Receiver } from './receiver.js';

/**
 * What the tests of at-least-once delivery across a crash share (test/webhooks-kill.test.ts,
 * test/cluster/webhooks.test.ts): a product whose webhook takes `reading` events, a plain MQTT
 * device's burst of them, and what the receiver got.
 */

/** A new account and product, with a webhook on `reading` events to the receiver's `/<path>`. */
export async function productWithHook(url: string, receiver: Receiver, path: string): Promise<{ token: string; productId: number }> {
  const { token } = await signUp(url);
  const productId = (await newProduct(url, token, `Hooks ${path}`)).id;
  const made = await raw(`${url}/v1/products/${productId}/webhooks`, { method: 'POST', token, json: { event: 'reading', url: `${receiver.url}/${path}` } });
  assert.equal(made.status, 201, made.text);
  return { token, productId };
}

/** A plain MQTT device publishing QoS 1 events numbered from 0; answers the numbers the cloud acknowledged. */
export async function burst(mqttUrl: string, who: Identity, count: number, onAck?: (n: number) => void): Promise<{ acked: Set<string>; client: mqtt.MqttClient }> {
  const client = await mqtt.connectAsync(mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  client.on('error', () => undefined);
  const acked = new Set<string>();
  for (let n = 0; n < count; n++) {
    const data = `${who.id.slice(0, 6)}-${n}`;
    client.publish(`devices/${who.id}/events/reading`, JSON.stringify({ data, ttl: 60, private: true }), { qos: 1 }, (err) => {
      if (err) return;
      acked.add(data);
      onAck?.(acked.size);
    });
  }
  return { acked, client };
}

/** Event data the receiver got at `/<path>`, each once however many times it came. */
export const deliveredData = (receiver: Receiver, path: string): Set<string | null> =>
  new Set(receiver.received.filter((r) => r.url === `/${path}`).map((r) => new URLSearchParams(r.body).get('data')));
