// The Node.js floor of bench/connections.ts and bench/config-fanout.ts: an MQTT server in one
// Node.js process with no storage, no authentication and no presence. It takes the devices'
// connections itself (mqtt-packet's parser per connection, Nagle off, as Skyport's gateway) and
// answers CONNECT with CONNACK 0, SUBSCRIBE with SUBACK and PINGREQ with PINGRESP. Started with
// a prefix it is also the configuration benchmark's cloud: what the devices publish goes to the
// baseline's cloud logic (bench/config-baseline.ts), whose messages it writes straight to the
// subscribed connection. What it reaches is the most a Node.js gateway, or cloud, reaches on the
// machine with the same load.
// A helper process (bench/command-child.ts), so that its CPU is its own; its commands:
//   {cmd:'start', prefix?}            → the port it listens on
//   {cmd:'setFleet', module, value}
//   {cmd:'push', ids, module}
//   {cmd:'acks', n, timeoutMs}        → when the last of `n` acknowledgements came
import { createServer, type AddressInfo, type Socket } from 'node:net';
import mqttPacket, { type Packet } from 'mqtt-packet';
import { baselineLogic } from './config-baseline.js';
import { serveCommands } from './child-commands.js';

const CONNACK = mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false });
const PINGRESP = mqttPacket.generate({ cmd: 'pingresp' });

type Command =
  | { cmd: 'start'; prefix?: string }
  | { cmd: 'setFleet'; module: string; value: Record<string, unknown> }
  | { cmd: 'push'; ids: string[]; module: string }
  | { cmd: 'acks'; n: number; timeoutMs: number };

/** Each subscribed topic's connection: devices subscribe to their own topic only. */
const subscribers = new Map<string, Socket>();
let logic: ReturnType<typeof baselineLogic> | undefined;

function publishTo(topic: string, payload: string): void {
  const socket = subscribers.get(topic);
  if (socket && !socket.destroyed) socket.write(mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, dup: false, retain: false }));
}

const server = createServer({ noDelay: true }, (socket) => {
  const parser = mqttPacket.parser();
  // Made at the first SUBSCRIBE: a connection that only connects costs what a bare one does.
  let topics: string[] | null = null;
  parser.on('packet', (p: Packet) => {
    if (p.cmd === 'connect') socket.write(CONNACK);
    else if (p.cmd === 'subscribe') {
      if (!topics) {
        const mine: string[] = topics = [];
        socket.on('close', () => { for (const t of mine) if (subscribers.get(t) === socket) subscribers.delete(t); });
      }
      for (const s of p.subscriptions) {
        subscribers.set(s.topic, socket);
        topics.push(s.topic);
      }
      socket.write(mqttPacket.generate({ cmd: 'suback', messageId: p.messageId, granted: p.subscriptions.map(() => 0) }));
    } else if (p.cmd === 'publish') logic?.onPublish(p.topic, typeof p.payload === 'string' ? Buffer.from(p.payload) : p.payload);
    else if (p.cmd === 'pingreq') socket.write(PINGRESP);
    else if (p.cmd === 'disconnect') socket.end();
  });
  parser.on('error', () => socket.destroy());
  socket.on('data', (chunk) => parser.parse(chunk));
  socket.on('error', () => socket.destroy());
});

serveCommands<Command>(async (c) => {
  switch (c.cmd) {
    case 'start':
      if (c.prefix !== undefined) logic = baselineLogic(c.prefix, publishTo);
      await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 511 }, resolve));
      return (server.address() as AddressInfo).port;
    case 'setFleet':
      return logic?.setFleet(c.module, c.value);
    case 'push':
      return logic?.push(c.ids, c.module);
    case 'acks':
      return (await (logic as ReturnType<typeof baselineLogic>).acks(c.n, c.timeoutMs)).lastAt;
  }
});
