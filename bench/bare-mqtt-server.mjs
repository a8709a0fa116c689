// The Node.js floor of `npm run bench:connections`: the least a Node.js MQTT server does for a
// device's connect, with none of a cloud's work. It accepts TCP connections (Nagle off, as the
// gateway does), parses each one's packets with mqtt-packet's parser (the gateway's parser, and
// that of Node's MQTT brokers), answers every CONNECT with CONNACK 0 without looking at the
// credentials, and every PINGREQ with PINGRESP. No storage, no presence, no authentication.
// Run as a child process (fork) so that its CPU is its own; it listens on a free loopback port
// and reports it over IPC.
import { createServer } from 'node:net';
import mqttPacket from 'mqtt-packet';

const CONNACK = mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false });
const PINGRESP = mqttPacket.generate({ cmd: 'pingresp' });

const server = createServer({ noDelay: true }, (socket) => {
  const parser = mqttPacket.parser();
  parser.on('packet', (packet) => {
    if (packet.cmd === 'connect') socket.write(CONNACK);
    else if (packet.cmd === 'pingreq') socket.write(PINGRESP);
  });
  parser.on('error', () => socket.destroy());
  socket.on('data', (chunk) => parser.parse(chunk));
  socket.on('error', () => socket.destroy());
});

server.listen({ port: 0, host: '127.0.0.1', backlog: 511 }, () => {
  const address = server.address();
  process.send?.({ kind: 'port', port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('disconnect', () => process.exit(0));
