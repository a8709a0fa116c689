import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IDisconnectPacket } from 'mqtt';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { openEventStream } from '../helpers/sse.js';

/**
 * Take-over across nodes (docs/architecture.md, "Presence and node leases"; MQTT 3.1.1 §3.1.4,
 * MQTT 5 reason 0x8E): a device connected to node A connects again through node B. A closes the
 * older connection, the device stays online (no offline event, the store names B), and calls
 * from either node reach it on B.
 */
let cluster: TestCluster;
let a: TestServer;
let b: TestServer;
let token: string;
let product: { id: number };
before(async () => {
  cluster = await startCluster(['all', 'all']);
  [a, b] = cluster.nodes as [TestServer, TestServer];
  ({ token } = await signUp(a.url));
  product = await newProduct(a.url, token, 'Take-over');
});
after(async () => { await cluster.close(); });

const stored = async (id: string) =>
  (await a.skyport.db.query<{ online: boolean; node_id: string | null }>('SELECT online, node_id FROM devices WHERE id = $1', [id]))[0];

for (const version of [5, 4] as const) {
  test(`MQTT ${version === 5 ? '5' : '3.1.1'}: a device that connects through another node takes its session over there and stays online`, async () => {
    const who = await provision(a.url, token, product.id);
    const stream = await openEventStream(`${b.url}/v1/products/${product.id}/events`, token);
    // Each connection answers with the node it is on, so that a call shows which one it reached.
    const older = await fakeDevice(a.mqttUrl, who, { protocolVersion: version, functions: { where: () => 1 } });
    const told: IDisconnectPacket[] = [];
    older.client.on('disconnect', (packet) => told.push(packet));
    const closed = new Promise<void>((resolve) => older.client.once('close', () => resolve()));
    let newer: Awaited<ReturnType<typeof fakeDevice>> | undefined;
    try {
      await eventually(async () => ((await stored(who.id))?.online ? true : undefined), 5000, 'online on A');
      assert.deepEqual(await stored(who.id), { online: true, node_id: 'node-1' });

      newer = await fakeDevice(b.mqttUrl, who, { protocolVersion: version, functions: { where: () => 2 }, variables: { v: ['int32', 2] } });
      await closed;
      if (version === 5) assert.deepEqual(told.map((p) => p.reasonCode), [0x8e], 'session taken over');
      else assert.equal(told.length, 0, 'MQTT 3.1.1 has no DISCONNECT from the server: the connection is closed');

      await eventually(async () => ((await stored(who.id))?.node_id === 'node-2' ? true : undefined), 5000, 'the store naming B');
      for (const node of [a, b]) {
        const view = await raw(`${node.url}/v1/devices/${who.id}`, { token });
        assert.equal(view.json.online, true, `${node.url}: ${view.text}`);
        const call = await raw(`${node.url}/v1/devices/${who.id}/where`, { method: 'POST', token, json: { arg: '' } });
        assert.equal(call.status, 200, call.text);
        assert.equal(call.json.return_value, 2, 'the call reached the connection on B');
      }

      // A sentinel after the take-over: once it is in, an offline event would have been too.
      await newer.publish('sentinel', { data: 'after', private: true });
      await eventually(() => (stream.events.some((e) => e.name === 'sentinel' && e.coreid === who.id) ? true : undefined), 5000, 'the sentinel');
      const statuses = stream.events.filter((e) => e.name === 'spark/status' && e.coreid === who.id).map((e) => e.data);
      assert.deepEqual(statuses, ['online', 'online']);
      assert.deepEqual(await stored(who.id), { online: true, node_id: 'node-2' });
    } finally {
      stream.close();
      await older.close();
      await newer?.close();
    }
    // Its last connection ends in order: offline on every node.
    await eventually(async () => ((await stored(who.id))?.online === false ? true : undefined), 5000, 'offline after the goodbye');
  });
}
