// A child process of bench/device-calls.ts that plays the answering side, with plain mqtt.js
// clients (no Skyport code), one connection each, Nagle's algorithm off:
// - mode "skyport": devices of docs/device-protocol.md. Each connects with its id and secret,
//   subscribes devices/<id>/cloud/#, publishes hello {"functions":["echo"],"variables":{}}, and
//   answers every devices/<id>/cloud/call {id,name,arg} on devices/<id>/reply with
//   {id, return_value: arg.length}.
// - mode "raw" (the floor): responder k subscribes <prefix>/<k>/req on Mosquitto and answers each
//   {id,name,arg} on <prefix>/<k>/res with the same {id, return_value: arg.length}.
// The setup comes over IPC; "ready" is sent once every client is connected and subscribed (and,
// for devices, once the gateway has acknowledged the hello, so their functions are known).
import mqtt from 'mqtt';

interface Setup { mode: 'skyport' | 'raw'; mqttUrl: string; prefix?: string; devices: Array<{ id: string; secret: string }> }

const noDelay = (c: mqtt.MqttClient) => (c.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);

async function device(url: string, id: string, secret: string): Promise<mqtt.MqttClient> {
  const c = await mqtt.connectAsync(url, { clientId: id, username: id, password: secret, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4 });
  noDelay(c);
  c.on('message', (topic, payload) => {
    if (!topic.endsWith('/cloud/call')) return;
    const req = JSON.parse(payload.toString()) as { id: string; name: string; arg: string };
    c.publish(`devices/${id}/reply`, JSON.stringify({ id: req.id, return_value: req.arg.length }));
  });
  await c.subscribeAsync(`devices/${id}/cloud/#`, { qos: 0 });
  // QoS 1: the PUBACK comes after the gateway has taken the hello in.
  await c.publishAsync(`devices/${id}/hello`, JSON.stringify({ functions: ['echo'], variables: {} }), { qos: 1 });
  return c;
}

async function responder(url: string, prefix: string, k: number): Promise<mqtt.MqttClient> {
  const c = await mqtt.connectAsync(url, { clientId: `${prefix.replace(/\//g, '-')}-responder-${k}`, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4 });
  noDelay(c);
  c.on('message', (_topic, payload) => {
    const req = JSON.parse(payload.toString()) as { id: string; name: string; arg: string };
    c.publish(`${prefix}/${k}/res`, JSON.stringify({ id: req.id, return_value: req.arg.length }));
  });
  await c.subscribeAsync(`${prefix}/${k}/req`, { qos: 0 });
  return c;
}

process.once('message', (m) => {
  const setup = m as Setup;
  const clients = Promise.all(setup.devices.map((d, k) => (setup.mode === 'skyport' ? device(setup.mqttUrl, d.id, d.secret) : responder(setup.mqttUrl, setup.prefix ?? 'bench', k))));
  clients.then((cs) => {
    for (const c of cs) c.on('close', () => { console.error('responder: a connection closed during the run'); process.exit(1); });
    process.send?.('ready');
  }, (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
});
process.on('disconnect', () => process.exit(0));
