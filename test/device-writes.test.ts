import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { basic, raw } from './helpers/http.js';
import { PASSWORD, newProduct, signUp } from './helpers/fixtures.js';
import { fakeDevice, provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import mqtt from 'mqtt';

/**
 * Writes of devices that take several statements are all or nothing (a crash between two of them
 * leaves everything as before), and what follows a write (the device's connection taking its new
 * scope) happens once it has committed, at once.
 */
let server: TestServer;
let faulty: FaultyDb;
before(async () => { server = await startTestServer({ wrapDb: (db) => (faulty = faultyDb(db)) }); });
after(async () => { await server.close(); });

async function team() {
  const account = await signUp(server.url);
  return { ...account, product: await newProduct(server.url, account.token, 'Writes') };
}

/** The whole fleet as the API lists it, and the total the page answers (the product's counter). */
async function fleet(token: string, productId: number) {
  const page = await raw(`${server.url}/v1/products/${productId}/devices?per_page=1000`, { token });
  assert.equal(page.status, 200, page.text);
  return { devices: page.json.devices as Array<{ id: string; owner: string | null }>, total: page.json.meta.total as number };
}

/** A customer of the product (its e-mail and token), through a customers:create client. */
async function customerOf(token: string, productId: number) {
  const client = await raw(`${server.url}/v1/products/${productId}/clients`, { method: 'POST', token, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
  const address = email('cust');
  const made = await raw(`${server.url}/v1/products/${productId}/customers`, { method: 'POST', headers: { authorization: basic(client.json.client.id as string, client.json.client.secret as string) }, form: { email: address, password: PASSWORD } });
  assert.equal(made.status, 201, made.text);
  return { email: address, token: made.json.access_token as string };
}

/** A claim code of the customer, presented for the device as the gateway does. */
async function claimFor(customerToken: string, productId: number, deviceId: string): Promise<void> {
  const code = await raw(`${server.url}/v1/products/${productId}/device_claims`, { method: 'POST', token: customerToken, json: {} });
  await server.skyport.services.claims.redeem(deviceId, code.json.claim_code as string);
}

test('removing a device from its product is all or nothing: a crash before the count moves leaves the device in the fleet, owned', async () => {
  const { token, username, product } = await team();
  const kept = await provision(server.url, token, product.id);
  const who = await provision(server.url, token, product.id);
  assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { id: who.id } })).status, 200);

  faulty.crashAt(/UPDATE products SET device_count/);
  const crashed = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'DELETE', token });
  assert.ok(faulty.crashed, 'the crash happened');
  assert.equal(crashed.status, 500);

  const after = await fleet(token, product.id);
  assert.deepEqual(after.devices.map((d) => d.id).sort(), [kept.id, who.id].sort(), 'still in the product');
  assert.equal(after.total, after.devices.length, "the product's count is its devices");
  assert.equal(after.devices.find((d) => d.id === who.id)?.owner, username, 'still owned');

  // Done again without a crash, it is done whole.
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'DELETE', token })).status, 204);
  assert.deepEqual(await fleet(token, product.id).then((f) => [f.devices.map((d) => d.id), f.total]), [[kept.id], 1]);
});

test("deleting a customer is all or nothing: a crash before the customer's row goes leaves its devices and claim codes", async () => {
  const { token, product } = await team();
  const customer = await customerOf(token, product.id);
  const who = await provision(server.url, token, product.id);
  await claimFor(customer.token, product.id, who.id);
  const spare = await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: customer.token, json: {} });

  faulty.crashAt(/DELETE FROM customers/);
  const crashed = await raw(`${server.url}/v1/products/${product.id}/customers/${encodeURIComponent(customer.email)}`, { method: 'DELETE', token });
  assert.ok(faulty.crashed, 'the crash happened');
  assert.equal(crashed.status, 500);

  const customers = await raw(`${server.url}/v1/products/${product.id}/customers`, { token });
  const listed = (customers.json.customers as Array<{ username: string; devices: string[] }>).find((c) => c.username === customer.email);
  assert.deepEqual(listed?.devices, [who.id], 'the customer is there, and still owns its device');
  assert.equal((await fleet(token, product.id)).devices[0]?.owner, customer.email);
  // Its other claim code was not dropped: it still claims (its own device, again).
  await server.skyport.services.claims.redeem(who.id, spare.json.claim_code as string);

  assert.equal((await raw(`${server.url}/v1/products/${product.id}/customers/${encodeURIComponent(customer.email)}`, { method: 'DELETE', token })).status, 204);
  assert.equal((await fleet(token, product.id)).devices[0]?.owner, null, 'deleted whole: the device released');
});

test("deleting a product releases its customers' devices, all or nothing; a user can then claim one", async () => {
  const { token, product } = await team();
  const customer = await customerOf(token, product.id);
  const who = await provision(server.url, token, product.id);
  await claimFor(customer.token, product.id, who.id);
  const remove = () => raw(`${server.url}/v1/products/${product.id}?confirm=${product.slug}`, { method: 'DELETE', token });

  faulty.crashAt(/DELETE FROM products/);
  assert.equal((await remove()).status, 500);
  assert.ok(faulty.crashed, 'the crash happened');
  assert.deepEqual((await fleet(token, product.id)).devices.map((d) => [d.id, d.owner]), [[who.id, customer.email]], 'nothing changed');

  assert.equal((await remove()).status, 204);
  // Its customer is gone with the product: the device is nobody's, and can be claimed again.
  const other = await signUp(server.url);
  const claimed = await raw(`${server.url}/v1/devices`, { method: 'POST', token: other.token, json: { id: who.id } });
  assert.equal(claimed.status, 200, claimed.text);
  const shown = await raw(`${server.url}/v1/devices/${who.id}`, { token: other.token });
  assert.deepEqual([shown.json.owner, shown.json.firmware_product_id], [other.username, null]);
});

test("importing a device a team member owns, outside any product, decides on the member inside the import's transaction", async () => {
  const { token, product } = await team();
  const next = await newProduct(server.url, token, 'Next');
  const who = await provision(server.url, token, product.id);
  // Out of its product, then claimed by the member: owned, in no product.
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'DELETE', token })).status, 204);
  assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { id: who.id } })).status, 200);
  // The embedded store has one session: a read beside the transaction would wait for it forever.
  const imported = await Promise.race([
    raw(`${server.url}/v1/products/${next.id}/devices`, { method: 'POST', token, json: { id: who.id } }),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000).unref()),
  ]);
  assert.ok(imported, 'the import answered');
  assert.deepEqual(imported.json.updatedDeviceIds, [who.id]);
  assert.deepEqual(await fleet(token, next.id).then((f) => [f.devices.map((d) => d.id), f.total]), [[who.id], 1]);
});

test('a device moved through the API takes its new scope at once: the former owner\'s events stop, the new product\'s arrive', async () => {
  const { token, product } = await team();
  const next = await newProduct(server.url, token, 'Next');
  const who = await provision(server.url, token, product.id);
  assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { id: who.id } })).status, 200);
  const dev = await fakeDevice(server.mqttUrl, who);
  try {
    // Owned: the owner's events reach it.
    await eventually(async () => {
      await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'owner', data: 'mine' } });
      return dev.received.some((e) => e.data === 'mine') ? true : undefined;
    });

    // Out of its product (owner released), then into another: each in a transaction.
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'DELETE', token })).status, 204);
    const imported = await raw(`${server.url}/v1/products/${next.id}/devices`, { method: 'POST', token, json: { id: who.id } });
    assert.deepEqual(imported.json.updatedDeviceIds, [who.id]);
    // The wait above may leave an owner's event on its way: a fleet event behind it is in last.
    await raw(`${server.url}/v1/products/${next.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'drained' } });
    await eventually(() => (dev.received.some((e) => e.data === 'drained') ? true : undefined));

    // At once, each sent once: the former owner's event must not arrive, the new fleet's must.
    const seen = dev.received.length;
    await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'owner', data: 'not yours' } });
    assert.equal((await raw(`${server.url}/v1/products/${next.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'sentinel' } })).status, 200);
    await eventually(() => (dev.received.some((e) => e.data === 'sentinel') ? true : undefined), 3000);
    assert.deepEqual(dev.received.slice(seen).map((e) => e.data), ['sentinel']);
  } finally {
    await dev.close();
  }
});

test('a device reads online in the API once it has its CONNACK, though its connect is stored after it, in a batch', async () => {
  const { token, product } = await team();
  const who = await provision(server.url, token, product.id);
  // Claimed: the user's own devices list it too.
  assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { id: who.id } })).status, 200);
  // The connect's presence write is held before it runs; it goes on a moment after the reads
  // below were sent. Reads that did not wait for it would answer at once, offline.
  const held = faulty.pauseAt(/^\s*UPDATE devices d SET\s+online/);
  const device = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  try {
    await held.reached;
    const reads = Promise.all([
      raw(`${server.url}/v1/devices/${who.id}`, { token }),
      raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token }),
      raw(`${server.url}/v1/products/${product.id}/devices`, { token }),
      raw(`${server.url}/v1/devices`, { token }),
    ]);
    const release = setTimeout(() => held.release(), 300);
    const [mine, inProduct, fleetPage, list] = await reads;
    clearTimeout(release);
    assert.equal(mine.json.online, true, mine.text);
    assert.equal(inProduct.json.online, true, inProduct.text);
    assert.equal((fleetPage.json.devices as Array<{ id: string; online: boolean }>).find((d) => d.id === who.id)?.online, true, fleetPage.text);
    assert.equal((list.json as Array<{ id: string; online: boolean }>).find((d) => d.id === who.id)?.online, true, list.text);
  } finally {
    held.release();
    await device.endAsync();
  }
});
