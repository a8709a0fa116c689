import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNatsBus } from '../../src/bus/nats.js';
import type { Bus, DeviceCommand } from '../../src/bus/bus.js';
import { isDomainError } from '../../src/domain/errors.js';
import { startNats, type TestNats } from '../helpers/nats.js';
import { startProxy, type TestProxy } from '../helpers/proxy.js';
import { eventually } from '../helpers/eventually.js';

/**
 * A device's request on its way over NATS while its node lets the device go (src/bus/nats.ts,
 * `hold`): NATS still routes requests to the node until it has the node's UNSUB. Node A reaches
 * NATS through a relay that can hold what NATS sends it, so that a request can be put on its way
 * to A before A lets the device go, and arrive after.
 */
let nats: TestNats;
let relay: TestProxy;
const log = () => ({ error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined });
const buses: Bus[] = [];
before(async () => {
  nats = await startNats();
  relay = await startProxy({ host: '127.0.0.1', port: nats.port });
});
after(async () => {
  relay.flow();
  await Promise.all(buses.map((b) => b.close()));
  await relay.close();
  await nats.stop();
});

/** Three nodes on one prefix: A through the relay, B and C straight to NATS. */
async function nodes() {
  const prefix = `p${Date.now()}${Math.random().toString(36).slice(2, 6)}`;
  const make = async (servers: string) => {
    const b = await createNatsBus({ servers, log, prefix });
    buses.push(b);
    return b;
  };
  return { a: await make(`nats://127.0.0.1:${relay.port}`), b: await make(nats.url), c: await make(nats.url) };
}

const call: DeviceCommand = { kind: 'call', name: 'where', arg: '' };
const failure = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return isDomainError(err) ? err.code : String(err);
  }
  return 'answered';
};

test('a request on its way when the node lets the device go is answered offline at once, not left to time out', async () => {
  const { a, c } = await nodes();
  const release = a.hold('dev-1', async () => ({ ok: true, value: 'a' }));
  await eventually(async () => (await c.send('dev-1', { kind: 'ping' }, 1_000).then(() => true, () => undefined)), 5_000, 'node A to serve the device');

  relay.stall();
  const started = Date.now();
  const answer = failure(c.send('dev-1', call, 3_000));
  // The request is routed to A (held by the relay) before A lets the device go.
  await eventually(() => relay.stalled > 0 || undefined, 5_000, 'the request on its way to node A');
  release();
  relay.flow();
  assert.equal(await answer, 'device_offline');
  assert.ok(Date.now() - started < 2_000, `answered in ${Date.now() - started} ms, not after the time-out`);
  // And once NATS has the UNSUB, nobody answers: offline too.
  assert.equal(await failure(c.send('dev-1', call, 3_000)), 'device_offline');
});

test('a request on its way when another node took the device over is answered by that node, not offline by the old one', async () => {
  const { a, b, c } = await nodes();
  let releaseA = () => undefined as void;
  releaseA = a.hold('dev-2', async () => ({ ok: true, value: 'a' }), () => releaseA());
  await eventually(async () => (await c.send('dev-2', { kind: 'ping' }, 1_000).then(() => true, () => undefined)), 5_000, 'node A to serve the device');

  relay.stall();
  // B takes the device over; its answer to a call takes a while (the device is far away).
  b.hold('dev-2', async (command) => {
    if (command.kind === 'call') await new Promise((r) => setTimeout(r, 300));
    return { ok: true, value: 'b' };
  });
  // A is told of the take-over only once the relay lets it through; meanwhile B is reachable.
  await eventually(async () => (await c.send('dev-2', { kind: 'ping' }, 1_000).then((r) => (r.ok && r.value === 'b') || undefined, () => undefined)), 5_000, 'node B to serve the device');
  const stalledBefore = relay.stalled;
  const answer = c.send('dev-2', call, 3_000);
  await eventually(() => relay.stalled > stalledBefore || undefined, 5_000, 'the request on its way to node A too');
  relay.flow();
  assert.deepEqual(await answer, { ok: true, value: 'b' });
});
