import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { configDevice, provision, type Holdings, type Identity } from '../helpers/device.js';
import { eventually, within } from '../helpers/eventually.js';
import { sample, scrape } from '../helpers/metrics.js';
import { bind, ConfigStatus, createDevice } from '../../src/sdk/index.js';
import type { ConfigReader } from '../../src/services/config/reader.js';

/**
 * Configuration delivery in a cluster (docs/architecture.md, "Configuration delivery in a
 * cluster"): a write on any node reaches the devices wherever they are connected, and all delivery
 * work for a device runs on the node that holds its connection, one delivery at a time. Devices
 * connect to the first two nodes; writes go through the third (or the second).
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Tells when the next read of a product's fleet configuration (a fan-out's, or a batch of connects') has been made, on any node. */
function fleetReads() {
  const waiting = new Map<number, Array<() => void>>();
  return {
    next(productId: number): Promise<void> {
      return new Promise((resolve) => waiting.set(productId, [...(waiting.get(productId) ?? []), resolve]));
    },
    wrap: (reader: ConfigReader): ConfigReader => ({
      ...reader,
      async effective(productId, ...rest) {
        const result = await reader.effective(productId, ...rest);
        const told = waiting.get(productId) ?? [];
        waiting.delete(productId);
        for (const resolve of told) resolve();
        return result;
      },
    }),
  };
}

const reads = fleetReads();
let cluster: TestCluster;
let A: TestServer;
let B: TestServer;
let C: TestServer;
before(async () => {
  cluster = await startCluster(['all', 'all', 'all'], { env: { METRICS: 'open', DEVICE_CALL_TIMEOUT_SECONDS: '2' }, seams: { configReader: reads.wrap } });
  [A, B, C] = cluster.nodes as [TestServer, TestServer, TestServer];
});
after(async () => { await cluster.close(); });

/** Each node's count of configuration deliveries by outcome, and of its bus round trips of a kind that were answered. */
async function counts(kind = 'sync') {
  return Promise.all([A, B, C].map(async (node) => {
    const text = await scrape(node.url);
    const n = (name: string, labels: string) => sample(text, name, labels) || 0;
    return {
      acknowledged: n('skyport_config_deliveries_total', 'outcome="acknowledged"'),
      refused: n('skyport_config_deliveries_total', 'outcome="refused"'),
      offline: n('skyport_config_deliveries_total', 'outcome="pending_offline"'),
      timeout: n('skyport_config_deliveries_total', 'outcome="pending_timeout"'),
      bus: n('skyport_bus_requests_seconds_count', `kind="${kind}",outcome="ok"`),
    };
  }));
}
type Counts = Awaited<ReturnType<typeof counts>>;
const delta = (before: Counts, after: Counts) => after.map((a, i) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (before[i] as Json)[k]])));

async function fleet(on: TestServer) {
  const { token } = await signUp(on.url);
  const product = await newProduct(on.url, token);
  const base = `${on.url}/v1/products/${product.id}/config`;
  const status = async (who: Identity) => (await raw(`${base}/${who.id}`, { token })).json as Json;
  const allInSync = async (who: Identity) => Object.values((await status(who)).delivery as Record<string, { state: string }>).every((d) => d.state === 'in_sync');
  return { token, product, base, status, allInSync };
}

test('a fleet write on one node reaches the devices connected to the two others, delivered by the node that holds each, and the rollout counts them', async () => {
  const { token, product, base, status, allInSync } = await fleet(C);
  const [onA, onB, sdkOnB, never] = await Promise.all([0, 1, 2, 3].map(() => provision(C.url, token, product.id))) as [Identity, Identity, Identity, Identity];
  const heldA: Holdings = new Map();
  const heldB: Holdings = new Map();
  const plainA = await configDevice(A.mqttUrl, onA, heldA);
  const plainB = await configDevice(B.mqttUrl, onB, heldB);
  // The SDK device binds rgb alone: it refuses every other module as unknown.
  let rgb = -1;
  const sdk = createDevice({ url: B.mqttUrl, id: sdkOnB.id, secret: sdkOnB.secret, reconnect: false });
  await sdk.configModule('rgb', { type: bind.enumeration({ off: 0, tracker: 1, particle: 2 }, { get: () => rgb, set: (v) => { rgb = v; } }) });
  await sdk.connect();
  try {
    await eventually(async () => ((await allInSync(onA)) && (await allInSync(onB)) && rgb === 2 ? true : undefined));
    // Every module answered: rgb taken, the rest refused.
    await eventually(async () => {
      const s = await status(sdkOnB);
      return Object.values(s.delivery as Record<string, { state: string }>).every((d) => d.state !== 'pending') && s.rejected.location === ConfigStatus.unknownModule ? true : undefined;
    });
    const before = await counts();

    const put = await raw(base, { method: 'PUT', token, json: { rgb: { type: 'off' } } });
    assert.equal(put.status, 200, put.text);
    await eventually(() => (heldA.get('rgb')?.value.type === 'off' && heldB.get('rgb')?.value.type === 'off' && rgb === 0 ? true : undefined));
    const rollout = await eventually(async () => {
      const r = (await raw(`${base}/rollout`, { token })).json as Json;
      return r.modules.rgb.in_sync === 3 ? r : undefined;
    });
    assert.deepEqual({ ...rollout, modules: undefined }, { devices: 4, in_sync: 2, rejected: 1, pending: 1, pending_online: 0, modules: undefined }, JSON.stringify(rollout));
    assert.deepEqual(rollout.modules.rgb, { in_sync: 3, pending: 1, rejected: 0 });
    assert.deepEqual(rollout.modules.location, { in_sync: 2, pending: 1, rejected: 1 });
    assert.equal((await status(never)).delivery.rgb.state, 'pending');
    assert.deepEqual(plainA.received.slice(9), ['rgb'], 'only what changed, once');
    assert.deepEqual(plainB.received.slice(9), ['rgb']);

    // Each device was sent the change by the node it is connected to; the writing node sent nothing.
    const [a, b, c] = delta(before, await counts());
    assert.deepEqual([a?.acknowledged, b?.acknowledged, c?.acknowledged], [1, 2, 0]);
    assert.deepEqual([a?.refused, b?.refused, c?.refused], [0, 0, 0], 'a value refused before is not sent again');
  } finally {
    await Promise.all([plainA.client.endAsync(), plainB.client.endAsync(), sdk.close()]);
  }
});

test('a device write on another node answers with what the device did: applied, refused with its code, unanswered, or offline', async () => {
  const { token, product, base, allInSync } = await fleet(C);
  const who = await provision(C.url, token, product.id);
  const held: Holdings = new Map();
  let mode: 'ok' | 'refuse' | 'silent' = 'ok';
  const dev = await configDevice(A.mqttUrl, who, held, (module) => (mode === 'refuse' && module === 'geofence' ? -33 : mode === 'silent' ? 'silent' : 0));
  const put = (json: Json) => raw(`${base}/${who.id}`, { method: 'PUT', token, json });
  try {
    await eventually(async () => ((await allInSync(who)) ? true : undefined));
    const before = await counts();
    const applied = await put({ geofence: { interval: 5 } });
    assert.equal(applied.status, 200, applied.text);
    assert.equal(applied.json.configuration.current.geofence.interval, 5);
    assert.equal(held.get('geofence')?.value.interval, 5);
    // The node holding the device delivered it; the writing node asked it over the bus.
    const [a, , c] = delta(before, await counts());
    assert.equal(a?.acknowledged, 1);
    assert.equal(c?.acknowledged, 0);
    assert.equal(c?.bus, 1, 'one bus round trip: the sync');

    mode = 'refuse';
    const refused = await put({ geofence: { interval: 7 } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error, 'device_rejected_configuration');
    assert.deepEqual(refused.json.results, [{ module: 'geofence', status: 'rejected', code: -33 }]);
    // Refused already: not sent again, and the answer says so.
    const again = await put({ geofence: { interval: 7 } });
    assert.equal(again.status, 400, again.text);
    assert.deepEqual(again.json.results, [{ module: 'geofence', status: 'rejected', code: -33 }]);

    mode = 'silent';
    const unanswered = await put({ geofence: { interval: 9 } });
    assert.equal(unanswered.status, 408, unanswered.text);
    assert.match(unanswered.json.error_description, /stays pending/);
    const [a2] = delta(before, await counts());
    assert.deepEqual([a2?.acknowledged, a2?.refused, a2?.timeout], [1, 1, 1]);
  } finally {
    await dev.client.endAsync();
  }
  // Read on the node it was connected to (another node's cache of the device may be older).
  await eventually(async () => ((await raw(`${A.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online === false ? true : undefined));
  const offline = await put({ geofence: { interval: 11 } });
  assert.equal(offline.status, 202, offline.text);
  assert.equal(offline.json.configuration.pending.geofence.interval, 11);
  // It takes it when it connects again, to whichever node.
  const back = await configDevice(B.mqttUrl, who, held);
  try {
    await eventually(() => (held.get('geofence')?.value.interval === 11 ? true : undefined));
    await eventually(async () => ((await allInSync(who)) ? true : undefined));
  } finally {
    await back.client.endAsync();
  }
});

test('a device connecting on one node while a fleet write commits on another is sent each value once, one module at a time', async () => {
  const { token, product, base, status, allInSync } = await fleet(C);
  const who = await provision(C.url, token, product.id);
  const modules = Object.keys((await status(who)).delivery as Json);
  assert.equal(modules.length, 9);
  // It connects holding an older configuration: every module differs.
  const held: Holdings = new Map(modules.map((m) => [m, { value: {}, hash: '0000000000000000' }]));
  // It holds back its answer to the first module until the fleet write is committed and a fan-out has read the fleet.
  let letGo: () => void = () => undefined;
  const firstAnswer = new Promise<number>((resolve) => { letGo = () => resolve(0); });
  let answered = 0;
  const dev = await configDevice(A.mqttUrl, who, held, () => (answered++ === 0 ? firstAnswer : 0));
  try {
    await eventually(() => (dev.received.length === 1 ? true : undefined));
    const fannedOut = reads.next(product.id);
    const put = await raw(`${B.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } });
    assert.equal(put.status, 200, put.text);
    await within(fannedOut, 5000, () => 'the fan-out\'s read of the fleet not within 5000 ms');
    letGo();

    await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
    await eventually(async () => ((await allInSync(who)) ? true : undefined));
    const sent = dev.values.map((v) => `${v.module}@${v.hash}`);
    assert.equal(new Set(sent).size, sent.length, `a module was sent twice with the same value: ${sent.join(', ')}`);
    assert.equal(dev.mostUnanswered, 1, 'a module was sent before the device answered the one before');
    assert.deepEqual(dev.values.filter((v) => v.module === 'rgb').map((v) => v.value.type), ['particle', 'off'], 'the connect\'s delivery, then the write\'s');
    const rollout = (await raw(`${base}/rollout`, { token })).json as Json;
    assert.equal(rollout.in_sync, 1, JSON.stringify(rollout));
  } finally {
    letGo();
    await dev.client.endAsync();
  }
});

test('a device offline during a fleet write takes it when it reconnects to another node, and only it', async () => {
  const { token, product, base, allInSync } = await fleet(C);
  const who = await provision(C.url, token, product.id);
  const held: Holdings = new Map();
  const first = await configDevice(A.mqttUrl, who, held);
  await eventually(async () => ((await allInSync(who)) ? true : undefined));
  await first.client.endAsync();
  // Read on the node it was connected to (another node's cache of the device may be older).
  await eventually(async () => ((await raw(`${A.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online === false ? true : undefined));

  const put = await raw(base, { method: 'PUT', token, json: { rgb: { type: 'off' }, sleep: { mode: 'disable', exe_min: 17 } } });
  assert.equal(put.status, 200, put.text);
  const before = await counts();
  const second = await configDevice(B.mqttUrl, who, held);
  try {
    await eventually(() => (held.get('rgb')?.value.type === 'off' && held.get('sleep')?.value.exe_min === 17 ? true : undefined));
    await eventually(async () => ((await allInSync(who)) ? true : undefined));
    assert.deepEqual([...second.received].sort(), ['rgb', 'sleep']);
    const [a, b, c] = delta(before, await counts());
    assert.deepEqual([a?.acknowledged, b?.acknowledged, c?.acknowledged], [0, 2, 0], 'delivered by the node it reconnected to');
  } finally {
    await second.client.endAsync();
  }
});
