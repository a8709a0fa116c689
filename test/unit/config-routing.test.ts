import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createInProcessBus } from '../../src/bus/in-process.js';
import type { DeviceAnswer, DeviceCommand } from '../../src/bus/bus.js';
import { DomainError } from '../../src/domain/errors.js';
import type { ModuleResult, NodeDelivery } from '../../src/services/config/delivery.js';
import { createConfigDelivery } from '../../src/services/config/routing.js';

/**
 * Where configuration delivery runs (docs/architecture.md, "Configuration delivery in a
 * cluster"), on the in-process bus with this node's delivery recorded: what each answer of the
 * node holding the device becomes, and fleet notices.
 */
const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

function world() {
  const bus = createInProcessBus();
  const calls: string[] = [];
  let fanOutDone: () => void = () => undefined;
  const node = {
    fleetWritten: (productId: number) => {
      calls.push(`fleet ${productId}`);
      return new Promise<void>((resolve) => { fanOutDone = resolve; });
    },
    deviceWritten: async (productId: number, id: string, modules: ReadonlySet<string>): Promise<ModuleResult[]> => {
      calls.push(`here ${id} ${[...modules].join(',')}`);
      return [{ module: 'rgb', status: 'pending', reason: 'offline' }];
    },
    unanswered: async (productId: number, id: string): Promise<ModuleResult[]> => {
      calls.push(`unanswered ${id}`);
      return [{ module: 'sleep', status: 'pending', reason: 'timeout' }];
    },
    onHello: async () => undefined,
    inProgress: () => 0,
  } as unknown as NodeDelivery;
  const delivery = createConfigDelivery({ bus, node, log: () => silent, timeoutMs: 100 });
  /** A device held "on another node": its handler answers the sync as told. */
  const holder = (answer: (command: DeviceCommand, timeoutMs: number) => Promise<DeviceAnswer>) => bus.hold('dev1', answer);
  return { bus, calls, delivery, holder, endFanOut: () => fanOutDone() };
}

test('a device write goes to the node holding the device as a sync, with a timeout of several device timeouts, and answers with its results', async () => {
  const w = world();
  const seen: Array<[DeviceCommand, number]> = [];
  w.holder(async (command, timeoutMs) => {
    seen.push([command, timeoutMs]);
    return { ok: true, value: [{ module: 'geofence', status: 'rejected', code: -33 }] };
  });
  assert.deepEqual(await w.delivery.deviceWriteCommitted(7, 'dev1', new Set(['geofence'])), [{ module: 'geofence', status: 'rejected', code: -33 }]);
  assert.deepEqual(seen, [[{ kind: 'sync', productId: 7, modules: ['geofence'] }, 1000]]);
  assert.deepEqual(w.calls, [], 'this node delivered nothing itself');
});

test('nobody holding the device: this node works out what is pending; a holder that does not answer in time: what is not in sync stays pending', async () => {
  const w = world();
  assert.deepEqual(await w.delivery.deviceWriteCommitted(7, 'dev1', new Set(['rgb'])), [{ module: 'rgb', status: 'pending', reason: 'offline' }]);
  w.holder(async () => { throw new DomainError('device_timeout', 'no answer'); });
  assert.deepEqual(await w.delivery.deviceWriteCommitted(7, 'dev1', new Set(['rgb'])), [{ module: 'sleep', status: 'pending', reason: 'timeout' }]);
  assert.deepEqual(w.calls, ['here dev1 rgb', 'unanswered dev1']);
  // Other failures are the write's answer (the write stands).
  w.holder(async () => { throw new DomainError('service_unavailable', 'bus down'); });
  await assert.rejects(w.delivery.deviceWriteCommitted(7, 'dev1'), /bus down/);
});

test('a fleet write is a notice: the writer resolves once its own fan-out is done; another node\'s notice fans out here too; a bad notice is ignored', async () => {
  const w = world();
  let resolved = false;
  const done = w.delivery.fleetWriteCommitted(3).then(() => { resolved = true; });
  assert.deepEqual(w.calls, ['fleet 3'], 'the notice came back and this node fanned out once');
  await new Promise((r) => setImmediate(r));
  assert.equal(resolved, false, 'not before its fan-out ends');
  w.endFanOut();
  await done;
  w.bus.notify('config.fleet', { productId: 4, id: 'other-node:1' });
  w.bus.notify('config.fleet', { productId: 'x' });
  assert.deepEqual(w.calls, ['fleet 3', 'fleet 4']);
});
