import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { raw } from './http.js';
import { bind, type Device } from '../../src/sdk/index.js';

/** A device identity as provisioning answers it. */
export interface Identity { id: string; secret: string }

export async function provision(url: string, token: string, productId: number): Promise<Identity> {
  const r = await raw(`${url}/v1/devices`, { method: 'POST', token, json: { product_id: productId } });
  assert.equal(r.status, 201, r.text);
  return { id: r.json.id as string, secret: r.json.device_secret as string };
}

export interface FakeDevice {
  client: mqtt.MqttClient;
  /** Events the cloud delivered, as their payloads. */
  received: Array<Record<string, unknown>>;
  signals: boolean[];
  claim(code: string): Promise<Record<string, unknown>>;
  publish(name: string, body: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

/**
 * A device made of plain mqtt.js calls, written from docs/device-protocol.md: it describes its
 * functions and variables, answers calls and reads, and records what the cloud sends it.
 */
export async function fakeDevice(mqttUrl: string, who: Identity, spec: {
  functions?: Record<string, (arg: string) => number | Promise<number> | 'hang'>;
  variables?: Record<string, ['int32' | 'double' | 'string' | 'bool', number | string | boolean]>;
  system_firmware_version?: string;
  subscribe?: string[];
  /** MQTT 3.1.1 (4, mqtt.js's default) or MQTT 5. */
  protocolVersion?: 4 | 5;
} = {}): Promise<FakeDevice> {
  const { id } = who;
  const client = await mqtt.connectAsync(mqttUrl, { clientId: id, username: id, password: who.secret, reconnectPeriod: 0, protocolVersion: spec.protocolVersion ?? 4 });
  // Replies are small writes: without this, Nagle's algorithm holds each behind the last ACK.
  (client.stream as unknown as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
  const received: Array<Record<string, unknown>> = [];
  const signals: boolean[] = [];
  const claims: Array<(body: Record<string, unknown>) => void> = [];
  client.on('message', (topic, payload) => {
    const body = JSON.parse(payload.toString()) as Record<string, unknown>;
    const leaf = topic.slice(`devices/${id}/cloud/`.length);
    if (leaf === 'call') {
      const fn = spec.functions?.[body.name as string];
      if (!fn) return void client.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: body.id, error: 'no such function' }));
      void Promise.resolve(fn(body.arg as string)).then((v) => {
        if (v !== 'hang') void client.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: body.id, return_value: v }));
      });
    } else if (leaf === 'get') {
      const v = spec.variables?.[body.name as string];
      void client.publishAsync(`devices/${id}/reply`, JSON.stringify(v ? { id: body.id, result: v[1] } : { id: body.id, error: 'no such variable' }));
    } else if (leaf === 'signal') {
      signals.push(body.signal as boolean);
    } else if (leaf === 'claim') {
      claims.shift()?.(body);
    } else if (leaf.startsWith('events/')) {
      received.push(body);
    }
  });
  await client.subscribeAsync(spec.subscribe ?? [`devices/${id}/cloud/#`], { qos: 1 });
  const variables = Object.fromEntries(Object.entries(spec.variables ?? {}).map(([k, [t]]) => [k, t]));
  await client.publishAsync(`devices/${id}/hello`, JSON.stringify({
    functions: Object.keys(spec.functions ?? {}), variables, system_firmware_version: spec.system_firmware_version ?? '5.8.0',
  }), { qos: 1 });
  return {
    client, received, signals,
    claim(code) {
      const answer = new Promise<Record<string, unknown>>((resolve) => claims.push(resolve));
      void client.publishAsync(`devices/${id}/claim`, JSON.stringify({ code }), { qos: 1 });
      return answer;
    },
    async publish(name, body) {
      await client.publishAsync(`devices/${id}/events/${name}`, JSON.stringify(body), { qos: 1 });
    },
    async close() {
      await client.endAsync();
    },
  };
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What a configuration device holds, module by module, and the order it was sent modules in. */
export type Holdings = Map<string, { value: Json; hash: string }>;

/**
 * A device that speaks the configuration protocol of docs/device-protocol.md ("Configuration"):
 * it reports the hashes of what it holds at connect, keeps what it is sent, and answers
 * `answer(module)` (0 takes it, a negative code refuses it, 'silent' answers nothing; a promise
 * answers once it settles). `values` lists each module sent with its hash; `mostUnanswered` is
 * the most modules it was sent at once without having answered them yet (the cloud sends the
 * next module after the answer, so it stays 1).
 */
export async function configDevice(mqttUrl: string, who: Identity, held: Holdings, answer: (module: string) => number | 'silent' | Promise<number> = () => 0) {
  const c = await mqtt.connectAsync(mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  const received: string[] = [];
  const values: Array<{ module: string; value: Json; hash: string }> = [];
  const state = { unanswered: 0, mostUnanswered: 0 };
  c.on('message', (topic, payload) => {
    if (!topic.endsWith('/cloud/config/set')) return;
    const m = JSON.parse(payload.toString()) as { id: string; module: string; value: Json; hash: string };
    received.push(m.module);
    values.push({ module: m.module, value: m.value, hash: m.hash });
    state.mostUnanswered = Math.max(state.mostUnanswered, (state.unanswered += 1));
    void Promise.resolve(answer(m.module)).then((status) => {
      if (status === 'silent') return;
      state.unanswered -= 1;
      if (status === 0) held.set(m.module, { value: m.value, hash: m.hash });
      void c.publishAsync(`devices/${who.id}/config/ack`, JSON.stringify({ id: m.id, status }));
    });
  });
  await c.subscribeAsync(`devices/${who.id}/cloud/#`, { qos: 1 });
  await c.publishAsync(`devices/${who.id}/config/hello`, JSON.stringify({ modules: Object.fromEntries([...held].map(([m, v]) => [m, v.hash])) }), { qos: 1 });
  return {
    client: c, received, values,
    get mostUnanswered() { return state.mostUnanswered; },
  };
}

/**
 * A device of plain mqtt.js calls that reconnects by itself (MQTT 5) and, at every connect, says
 * its functions and the hashes of what it holds; it takes every configuration module and answers
 * every call with 7. For the cluster's failover tests: it follows a load balancer to whichever
 * node is left.
 */
export function reconnectingDevice(mqttUrl: string, who: Identity): { client: mqtt.MqttClient; held: Holdings } {
  const held: Holdings = new Map();
  const client = mqtt.connect(mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 200, protocolVersion: 5 });
  client.on('connect', () => {
    void (async () => {
      await client.subscribeAsync(`devices/${who.id}/cloud/#`, { qos: 1 });
      await client.publishAsync(`devices/${who.id}/hello`, JSON.stringify({ functions: ['where'], variables: {} }), { qos: 1 });
      await client.publishAsync(`devices/${who.id}/config/hello`, JSON.stringify({ modules: Object.fromEntries([...held].map(([m, v]) => [m, v.hash])) }), { qos: 1 });
    })().catch(() => undefined);
  });
  client.on('message', (topic, payload) => {
    const m = JSON.parse(payload.toString()) as Json;
    if (topic.endsWith('/cloud/config/set')) {
      held.set(m.module as string, { value: m.value as Json, hash: m.hash as string });
      void client.publishAsync(`devices/${who.id}/config/ack`, JSON.stringify({ id: m.id, status: 0 }));
    } else if (topic.endsWith('/cloud/call')) {
      void client.publishAsync(`devices/${who.id}/reply`, JSON.stringify({ id: m.id, return_value: 7 }));
    }
  });
  return { client, held };
}

/** The settings of the `engine` module of the schema `engineSchema()` (helpers/fixtures.ts) makes. */
export interface Engine { idle: number; fastpub: number }

/** Binds that `engine` module on an SDK device to `engine`, within the schema's bounds (idle lower if `maxIdle`). */
export function bindEngine(device: Device, engine: Engine, maxIdle = 10000): Promise<void> {
  return device.configModule('engine', {
    idle: bind.integer(engine, 'idle', { min: 0, max: maxIdle }),
    fastpub: bind.integer(engine, 'fastpub', { min: 0, max: 3600000 }),
  });
}
