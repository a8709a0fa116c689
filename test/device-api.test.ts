import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { PASSWORD, newProduct, rejection, signUp } from './helpers/fixtures.js';
import { fakeDevice, provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';

/**
 * The REST side of devices through the real particle-api-js (docs/particle-compatibility.md: device
 * records, function calls and variables, events, claim codes and claiming): calls, reads, signal,
 * events both ways, and the customer flow that ends in a claimed device.
 */
let server: TestServer;
before(async () => { server = await startTestServer({ env: { EVENTS_KEEPALIVE_SECONDS: '1' } }); });
after(async () => { await server.close(); });

async function team() {
  const account = await signUp(server.url);
  return { ...account, product: await newProduct(server.url, account.token, 'Devices') };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function nextEvent(stream: any, name: string, ms = 5000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ${name} event`)), ms);
    const on = (e: Record<string, unknown>) => {
      if (e.name !== name) return;
      clearTimeout(t);
      stream.removeListener('event', on);
      resolve(e);
    };
    stream.on('event', on);
  });
}

test('callFunction, getVariable, getDevice, signalDevice and ping through particle-api-js', async () => {
  const { api, token, product } = await team();
  const who = await provision(server.url, token, product.id);
  const dev = await fakeDevice(server.mqttUrl, who, {
    functions: { led: (arg) => (arg === 'on' ? 1 : 0), fail: () => 'hang' },
    variables: { temp: ['double', 21.5], label: ['string', 'hall'], armed: ['bool', true] },
  });
  try {
    const info = await eventually(async () => {
      const r = await api.getDevice({ deviceId: who.id, product: product.id, auth: token });
      return r.body.connected && r.body.functions.length === 2 ? r.body : undefined;
    });
    assert.equal(info.online, true);
    assert.deepEqual(info.variables, { temp: 'double', label: 'string', armed: 'bool' });

    const called = await api.callFunction({ deviceId: who.id, name: 'led', argument: 'on', product: product.id, auth: token });
    assert.equal(called.statusCode, 200);
    assert.equal(called.body.return_value, 1);
    assert.equal(called.body.connected, true);
    assert.equal(called.body.id, who.id);
    // The form body of the docs and particle-cli 3.x, and the bare value.
    const form = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/led?format=raw`, { method: 'POST', token, form: { arg: 'off' } });
    assert.equal(form.text, '0');

    const read = await api.getVariable({ deviceId: who.id, name: 'temp', product: product.id, auth: token });
    assert.equal(read.body.result, 21.5);
    assert.equal(read.body.name, 'temp');
    assert.equal(read.body.coreInfo.deviceID, who.id);
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/label?format=raw`, { token })).text, 'hall');
    assert.equal((await api.getVariable({ deviceId: who.id, name: 'armed', product: product.id, auth: token })).body.result, true);

    const signal = await api.signalDevice({ deviceId: who.id, signal: true, product: product.id, auth: token });
    assert.deepEqual(signal.body, { id: who.id, connected: true, signaling: true });
    await eventually(() => (dev.signals.length === 1 ? true : undefined));
    assert.deepEqual(dev.signals, [true]);

    assert.deepEqual((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/ping`, { method: 'PUT', token })).json, { online: true, ok: true });

    // Refusals: unknown function and variable (particle-cli maps 404 to "not found"), a
    // timeout, a name over 64 characters, an argument over the device's limit.
    const unknownFn = await rejection(api.callFunction({ deviceId: who.id, name: 'nope', argument: '', product: product.id, auth: token }));
    assert.equal(unknownFn.statusCode, 404);
    assert.equal(unknownFn.body.error, 'Function not found');
    const unknownVar = await rejection(api.getVariable({ deviceId: who.id, name: 'nope', product: product.id, auth: token }));
    assert.equal(unknownVar.statusCode, 404);
    assert.equal(unknownVar.body.error, 'Variable not found');
    const slow = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/fail`, { method: 'POST', token, json: { arg: '', timeout: 0.3 } });
    assert.equal(slow.status, 408);
    assert.equal(slow.json.error, 'Timed out.');
    const longName = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/${'f'.repeat(65)}`, { method: 'POST', token, json: { arg: '' } });
    assert.equal(longName.status, 400);
    const longArg = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/led`, { method: 'POST', token, json: { arg: 'x'.repeat(1025) } });
    assert.equal(longArg.status, 400);
    assert.match(longArg.json.error_description, /1024/);
    const badTimeout = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/led`, { method: 'POST', token, json: { arg: '', timeout: 'soon' } });
    assert.equal(badTimeout.status, 400);
  } finally {
    await dev.close();
  }

  // Offline: a clear 404, not a timeout.
  const offline = await eventually(async () => {
    const r = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/led`, { method: 'POST', token, json: { arg: 'on' } });
    return r.status === 404 ? r : undefined;
  });
  assert.equal(offline.json.error, 'device_offline');
  assert.deepEqual((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/ping`, { method: 'PUT', token })).json, { online: false, ok: true });
  const stranger = await signUp(server.url);
  const foreign = await rejection(stranger.api.callFunction({ deviceId: who.id, name: 'led', argument: 'on', auth: stranger.token }));
  assert.equal(foreign.statusCode, 403);
  assert.equal(foreign.body.error, 'Permission Denied');
});

test('an older Device OS takes shorter arguments', async () => {
  const { token, product } = await team();
  const who = await provision(server.url, token, product.id);
  const dev = await fakeDevice(server.mqttUrl, who, { functions: { echo: (a) => a.length }, system_firmware_version: '2.3.1' });
  try {
    await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.system_firmware_version === '2.3.1' ? true : undefined));
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/echo`, { method: 'POST', token, json: { arg: 'x'.repeat(622) } })).json.return_value, 622);
    const over = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/echo`, { method: 'POST', token, json: { arg: 'x'.repeat(623) } });
    assert.equal(over.status, 400);
    assert.match(over.json.error_description, /622/);
  } finally {
    await dev.close();
  }
});

test('events: device to streams (getEventStream, SSE format, keep-alive), API to devices (publishEvent)', async () => {
  const { api, token, product } = await team();
  const a = await provision(server.url, token, product.id);
  const b = await provision(server.url, token, product.id);
  const devA = await fakeDevice(server.mqttUrl, a);
  const devB = await fakeDevice(server.mqttUrl, b, { subscribe: [`devices/${b.id}/cloud/events/alarm/#`, `devices/${b.id}/cloud/claim`] });
  const productStream = await api.getEventStream({ product: product.id, auth: token });
  const deviceStream = await api.getEventStream({ product: product.id, deviceId: a.id, name: 'temp', auth: token });
  try {
    const seen = nextEvent(productStream, 'temp');
    const seenByDevice = nextEvent(deviceStream, 'temp');
    await devA.publish('temp', { data: '21.5', ttl: 30, private: true });
    for (const e of [await seen, await seenByDevice]) {
      assert.equal(e.data, '21.5');
      assert.equal(e.coreid, a.id);
      assert.equal(Number(e.ttl), 30);
      assert.ok(!Number.isNaN(Date.parse(e.published_at as string)));
    }

    // The API publishes to the product: devices that subscribed to the name receive it.
    const published = await api.publishEvent({ name: 'alarm/fire', data: 'on', isPrivate: true, product: product.id, auth: token });
    assert.deepEqual(published.body, { ok: true });
    await eventually(() => (devB.received.length === 1 ? true : undefined));
    assert.equal(devB.received[0]?.name, 'alarm/fire');
    assert.equal(devB.received[0]?.data, 'on');
    assert.equal(devB.received[0]?.coreid, 'api');
    // Not subscribed to that name: devB gets nothing; devA (all events) gets it. The next alarm is
    // devB's sentinel: events reach a device in the order they were published.
    await api.publishEvent({ name: 'other', data: 'x', isPrivate: true, product: product.id, auth: token });
    await eventually(() => (devA.received.some((e) => e.name === 'other') ? true : undefined));
    await api.publishEvent({ name: 'alarm/sentinel', data: 'y', isPrivate: true, product: product.id, auth: token });
    await eventually(() => (devB.received.length >= 2 ? true : undefined));
    assert.deepEqual(devB.received.map((e) => e.name), ['alarm/fire', 'alarm/sentinel']);

    // Presence is an event too.
    const offline = nextEvent(productStream, 'spark/status');
    await devB.close();
    assert.equal((await offline).data, 'offline');
  } finally {
    productStream.abort();
    deviceStream.abort();
    await devA.close();
  }

  // The wire format of docs/particle-compatibility.md#events, and a keep-alive comment within EVENTS_KEEPALIVE_SECONDS.
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/products/${product.id}/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body!.getReader();
  let text = '';
  const started = Date.now();
  while (!text.includes(':\n\n') && Date.now() - started < 3000) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  assert.ok(text.startsWith(':ok\n\n'), text);
  assert.ok(text.includes('\n:\n\n') || text.includes(':ok\n\n:\n\n'), `a keep-alive comment: ${JSON.stringify(text)}`);

  // Bad input: a missing or unfit name, oversized data.
  assert.equal((await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { data: 'x' } })).status, 400);
  assert.equal((await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'a#b' } })).status, 400);
  assert.equal((await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'a', data: 'x'.repeat(1025) } })).status, 400);
  assert.equal((await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, form: { name: 'a', data: 'y', private: 'true', ttl: '60' } })).status, 200);
});

test('the customer flow: create a customer, get a claim code, the device presents it, the customer calls the device', async () => {
  const { token, product } = await team();
  const client = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
  assert.equal(client.status, 201, client.text);
  const auth = basic(client.json.client.id as string, client.json.client.secret as string);
  const newCustomer = async () => {
    const r = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: auth }, form: { email: email('cust'), password: PASSWORD } });
    assert.equal(r.status, 201, r.text);
    return r.json.access_token as string;
  };
  const alice = await newCustomer();
  const bob = await newCustomer();
  const who = await provision(server.url, token, product.id);
  const dev = await fakeDevice(server.mqttUrl, who, { functions: { open: () => 42 } });
  try {
    const code = await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: alice, json: {} });
    assert.equal(code.status, 200, code.text);
    // Before the claim, alice reaches nothing.
    assert.equal((await raw(`${server.url}/v1/devices/${who.id}/open`, { method: 'POST', token: alice, json: { arg: '' } })).status, 403);

    assert.deepEqual(await dev.claim('not-a-code'), { ok: false, error: 'claim_code_invalid' });
    assert.deepEqual(await dev.claim(code.json.claim_code as string), { ok: true });
    assert.deepEqual(await dev.claim(code.json.claim_code as string), { ok: false, error: 'claim_code_invalid' }, 'single use');

    const called = await raw(`${server.url}/v1/devices/${who.id}/open`, { method: 'POST', token: alice, json: { arg: '' } });
    assert.equal(called.status, 200, called.text);
    assert.equal(called.json.return_value, 42);
    const mine = await raw(`${server.url}/v1/devices`, { token: alice });
    assert.deepEqual(mine.json.map((d: { id: string }) => d.id), [who.id]);
    const other = await raw(`${server.url}/v1/devices/${who.id}/open`, { method: 'POST', token: bob, json: { arg: '' } });
    assert.equal(other.status, 403);
    assert.equal(other.json.error, 'Permission Denied');

    // Bob's code cannot take alice's device.
    const bobCode = await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: bob, json: {} });
    assert.deepEqual(await dev.claim(bobCode.json.claim_code as string), { ok: false, error: 'device_claimed' });
  } finally {
    await dev.close();
  }
});

test('what is remembered for speed is forgotten at once: a removed team member and an unclaimed owner lose the device', async () => {
  const { token, product } = await team();
  const member = await signUp(server.url);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/team`, { method: 'POST', token, json: { username: member.username } })).status, 201);
  const who = await provision(server.url, token, product.id);
  const dev = await fakeDevice(server.mqttUrl, who, { functions: { f: () => 1 } });
  try {
    const call = (t: string, path = `/v1/products/${product.id}/devices/${who.id}/f`) => raw(`${server.url}${path}`, { method: 'POST', token: t, json: {} });
    await eventually(async () => ((await call(member.token)).status === 200 ? true : undefined));
    assert.equal((await call(member.token)).status, 200);
    const reads = [`/v1/products/${product.id}/devices`, `/v1/products/${product.id}/devices/${who.id}`];
    for (const path of reads) assert.equal((await raw(`${server.url}${path}`, { token: member.token })).status, 200, path);
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/team/${encodeURIComponent(member.username)}`, { method: 'DELETE', token })).status, 204);
    assert.equal((await call(member.token)).status, 403);
    for (const path of reads) assert.equal((await raw(`${server.url}${path}`, { token: member.token })).status, 403, path);

    // A customer claims it and calls it; the product releases the owner: the next call is refused.
    const client = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
    const customer = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(client.json.client.id as string, client.json.client.secret as string) }, form: { email: email('cached'), password: PASSWORD } });
    const customerToken = customer.json.access_token as string;
    const code = await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token: customerToken, json: {} });
    assert.deepEqual(await dev.claim(code.json.claim_code as string), { ok: true });
    assert.equal((await call(customerToken, `/v1/devices/${who.id}/f`)).status, 200);
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}/owner`, { method: 'DELETE', token })).status, 204);
    assert.equal((await call(customerToken, `/v1/devices/${who.id}/f`)).status, 403);
  } finally {
    await dev.close();
  }
});

test('a connected device follows its owner at once: released, it no longer receives the former owner\'s events', async () => {
  const { token, product } = await team();
  const who = await provision(server.url, token, product.id);
  const dev = await fakeDevice(server.mqttUrl, who);
  try {
    assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { id: who.id } })).status, 200);
    await eventually(async () => {
      await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'hello', data: 'mine' } });
      return dev.received.some((e) => e.data === 'mine') ? true : undefined;
    });
    assert.equal((await raw(`${server.url}/v1/devices/${who.id}`, { method: 'DELETE', token })).status, 200);
    // The wait above may leave an owner's event on its way: a fleet event behind it is in last.
    await raw(`${server.url}/v1/products/${product.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'drained' } });
    await eventually(() => (dev.received.some((e) => e.data === 'drained') ? true : undefined));
    // Still in the product: the fleet's event, sent after the owner's, is the sentinel.
    const count = dev.received.length;
    await raw(`${server.url}/v1/devices/events`, { method: 'POST', token, json: { name: 'hello', data: 'not yours' } });
    await raw(`${server.url}/v1/products/${product.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'sentinel' } });
    await eventually(() => (dev.received.some((e) => e.data === 'sentinel') ? true : undefined));
    assert.deepEqual(dev.received.slice(count).map((e) => e.data), ['sentinel']);
  } finally {
    await dev.close();
  }
});

test('an event stream whose client left while its token was being checked leaves no timer behind', async () => {
  // No token cache: each request reads its token from the store, so the client can be gone
  // before the stream would start.
  const uncached = await startTestServer({ env: { TOKEN_CACHE_SECONDS: '0' } });
  try {
    const { token } = await signUp(uncached.url);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const { connect } = await import('node:net');
    const { port } = new URL(uncached.url);
    const before = timers();
    await Promise.all(Array.from({ length: 20 }, () => new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(`GET /v1/devices/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
        socket.destroy();
        resolve();
      });
    })));
    // Token reads queue in the store in order: once two later requests have read theirs, the
    // twenty streams have read theirs and started, or not.
    for (let i = 0; i < 2; i++) assert.equal((await raw(`${uncached.url}/v1/user`, { token, network: true })).status, 200);
    assert.ok(timers() - before < 5, `timers before ${before}, after ${timers()}`);
  } finally {
    await uncached.close();
  }
});
