import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeProcess, type NodeProcess } from './helpers/cluster.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { startReceiver } from './helpers/receiver.js';
import { freshStore } from './helpers/server.js';
import { burst, deliveredData, productWithHook } from './helpers/webhook-bursts.js';
import { migrate } from '../src/storage/migrate.js';

/**
 * At least once across a crash (docs/webhooks.md, "At least once"), one node on each store: the
 * node is killed with SIGKILL in the middle of a burst while its deliveries wait for a slow
 * receiver, then started again on the same store; every event it acknowledged before it died is
 * delivered by the new process. (test/cluster/webhooks.test.ts kills one node of a cluster and
 * has another deliver.)
 */
test('a node killed with SIGKILL mid-burst and started again: every event it acknowledged is delivered', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-kill-'));
  const store = await freshStore({ dataDir: join(dir, 'data') });
  // Made from the run's template and migrated here, so that the node's process starts at once.
  const db = await store.open();
  await migrate(db);
  await db.close();
  const receiver = await startReceiver();
  // A short lease: the new process takes over what the dead one held after 5 s.
  const env = { ...store.settings, WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_LEASE_SECONDS: '5' } as Record<string, string>;
  let node: NodeProcess | undefined;
  try {
    node = await startNodeProcess(env);
    const { token, productId } = await productWithHook(node.url, receiver, 'killed');
    const who = await provision(node.url, token, productId);
    // Slow answers: deliveries pile up in the node, sent and unsent, when it dies.
    receiver.answer({ status: 200, delayMs: 300 });
    let killing: Promise<void> | undefined;
    const { acked, client } = await burst(`mqtt://127.0.0.1:${node.mqttPort}`, who, 3000, (n) => {
      if (n === 150) killing = node?.kill('SIGKILL');
    });
    await eventually(() => (killing ? true : undefined), 30_000, '150 events acknowledged');
    await killing;
    client.end(true);
    const acknowledged = [...acked];
    const delivered = () => deliveredData(receiver, 'killed');
    assert.ok(acknowledged.length >= 150 && acknowledged.length < 3000, `${acknowledged.length} acknowledged before the kill`);
    assert.ok(delivered().size < acknowledged.length, 'some were still to deliver when it died');

    receiver.answer({ status: 200 });
    node = await startNodeProcess(env);
    await eventually(() => acknowledged.every((d) => delivered().has(d)) || undefined, 40_000, 'every acknowledged event delivered');
  } finally {
    await node?.kill();
    await receiver.close();
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});
