import { test } from 'node:test';
import assert from 'node:assert/strict';
import mqttPacket from 'mqtt-packet';
import type { Packet, Parser } from 'mqtt-packet';
import { packetParser } from '../../src/gateway/packet-parser.js';

/**
 * The gateway's parser (src/gateway/packet-parser.ts) is mqtt-packet's with a plain buffer list
 * in place of its stream. It must read every packet a device sends exactly as mqtt-packet's own
 * parser does, however the bytes arrive, in both protocol versions the gateway speaks.
 */

const v4: Packet[] = [
  { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 30, clientId: 'e00fce68aaaaaaaaaaaaaaaa', username: 'e00fce68aaaaaaaaaaaaaaaa', password: Buffer.from('s3cret') },
  { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 0, clientId: 'd1', will: { topic: 'devices/d1/events/gone', payload: Buffer.from('bye'), qos: 0, retain: false } },
  { cmd: 'subscribe', messageId: 7, subscriptions: [{ topic: 'devices/d1/cloud/#', qos: 1 }, { topic: 'devices/d1/cloud/config/set', qos: 0 }] },
  { cmd: 'publish', topic: 'devices/d1/config/hello', payload: Buffer.from(JSON.stringify({ modules: { rgb: 'a'.repeat(64) } })), qos: 0, retain: false, dup: false },
  { cmd: 'publish', topic: 'devices/d1/events/temp', payload: Buffer.alloc(3000, 7), qos: 1, messageId: 9, retain: false, dup: false },
  { cmd: 'puback', messageId: 9 },
  { cmd: 'unsubscribe', messageId: 8, unsubscriptions: ['devices/d1/cloud/#'] },
  { cmd: 'pingreq' },
  { cmd: 'disconnect' },
];

const v5: Packet[] = [
  { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId: 'd5', properties: { maximumPacketSize: 4096, sessionExpiryInterval: 0 } },
  { cmd: 'publish', topic: 'devices/d5/events/x', payload: Buffer.from('{"a":1}'), qos: 1, messageId: 3, retain: false, dup: false, properties: { contentType: 'application/json', userProperties: { k: 'v' } } },
  { cmd: 'subscribe', messageId: 4, subscriptions: [{ topic: 'devices/d5/cloud/#', qos: 1, nl: false, rap: false, rh: 0 }], properties: { subscriptionIdentifier: 2 } },
  { cmd: 'puback', messageId: 3, reasonCode: 0 },
  { cmd: 'disconnect', reasonCode: 0 },
];

function parseAll(parser: Parser, chunks: Buffer[], version?: number): Packet[] {
  const out: Packet[] = [];
  parser.on('packet', (p) => out.push(p));
  parser.on('error', (err: Error) => out.push({ cmd: 'error', message: err.message } as unknown as Packet));
  if (version) (parser as unknown as { settings: { protocolVersion: number } }).settings.protocolVersion = version;
  for (const c of chunks) parser.parse(c);
  return out;
}

const bytesOf = (packets: Packet[], version: number) => Buffer.concat(packets.map((p) => mqttPacket.generate(p, { protocolVersion: version })));
const splitAt = (buf: Buffer, at: number) => [buf.subarray(0, at), buf.subarray(at)];

for (const [name, packets, version] of [['MQTT 3.1.1', v4, 4], ['MQTT 5', v5, 5]] as const) {
  test(`${name}: every packet reads as mqtt-packet's own parser reads it, in one chunk and split at every byte`, () => {
    const bytes = bytesOf(packets, version);
    const expected = parseAll(mqttPacket.parser(), [bytes], version);
    assert.equal(expected.length, packets.length);
    assert.deepEqual(parseAll(packetParser(), [bytes], version), expected);
    for (let at = 1; at < bytes.length; at += 1) {
      assert.deepEqual(parseAll(packetParser(), splitAt(bytes, at), version), expected, `split at byte ${at}`);
    }
    // A byte at a time, as a slow link may deliver them.
    assert.deepEqual(parseAll(packetParser(), [...bytes].map((b) => Buffer.from([b])), version), expected);
  });
}

test('a malformed packet is an error, and the parser reads the packets that follow it afresh', () => {
  // A SUBSCRIBE whose fixed header has reserved flags 0000 instead of 0010 ([MQTT-3.8.1-1]).
  const bad = Buffer.from([0x80, 0x02, 0x00, 0x01]);
  const good = mqttPacket.generate({ cmd: 'pingreq' });
  const theirs = parseAll(mqttPacket.parser(), [bad, good]);
  const ours = parseAll(packetParser(), [bad, good]);
  assert.equal(ours[0]?.cmd, 'error' as Packet['cmd']);
  assert.deepEqual(ours, theirs);
  assert.equal(ours.at(-1)?.cmd, 'pingreq');
});

test('bytes of a packet not yet whole are held, and counted, until the rest arrives', () => {
  const parser = packetParser();
  const bytes = mqttPacket.generate({ cmd: 'publish', topic: 'devices/d1/events/big', payload: Buffer.alloc(10_000, 1), qos: 0, retain: false, dup: false });
  const got: Packet[] = [];
  parser.on('packet', (p) => got.push(p));
  parser.parse(bytes.subarray(0, 5000));
  assert.equal(got.length, 0);
  // The gateway refuses to hold a packet longer than its limit, by this length (session.ts).
  assert.equal((parser as unknown as { packet: { length: number } }).packet.length, bytes.length - 3);
  parser.parse(bytes.subarray(5000));
  assert.equal(got.length, 1);
  assert.equal((got[0] as { payload: Buffer }).payload.length, 10_000);
});

test('what it holds between packets is a plain buffer list, not a stream, from the start and after an error', () => {
  const parser = packetParser();
  const list = () => (parser as unknown as { _list: object })._list;
  assert.equal('pipe' in list(), false);
  assert.equal('pipe' in (mqttPacket.parser() as unknown as { _list: object })._list, true, 'mqtt-packet\'s own holds a stream');
  parser.on('error', () => undefined);
  parser.parse(Buffer.from([0x80, 0x02, 0x00, 0x01]));
  parser.parse(mqttPacket.generate({ cmd: 'pingreq' }));
  assert.equal('pipe' in list(), false);
});
