import { createRequire } from 'node:module';
import mqttPacket from 'mqtt-packet';
import type { Parser } from 'mqtt-packet';

const require = createRequire(import.meta.url);
// Neither is exported by its package's entry point; both packages let their files be required.
// `bl` is mqtt-packet's dependency, not Skyport's: it is found from mqtt-packet, as mqtt-packet finds it.
const fromMqttPacket = createRequire(require.resolve('mqtt-packet'));
const BufferList = fromMqttPacket('bl/BufferList.js') as new () => unknown;
const Packet = fromMqttPacket('./packet.js') as new () => unknown;

/** mqtt-packet's parser class, which the package hands out only through `parser()`. */
const MqttParser = Object.getPrototypeOf(mqttPacket.parser()).constructor as new () => Parser & { parser(opts?: object): Parser };

/**
 * mqtt-packet's parser, holding the bytes of a packet not yet whole in a plain `BufferList`.
 * mqtt-packet keeps them in a `bl` stream, a whole `Duplex` (two stream states and their
 * listeners), made for each connection and again after each malformed packet, of which it uses
 * only the `BufferList` half (append, consume, read). A gateway makes one parser per device
 * connection, so a reconnect storm made tens of thousands of streams that nothing reads from
 * (docs/benchmarks.md, "Connected devices").
 *
 * `_resetState` is the parser's own name for the state it starts from; a test parses every
 * packet the gateway takes, whole and split at each byte, through this parser
 * (test/unit/packet-parser.test.ts), so that a change of mqtt-packet's internals shows there.
 */
class LeanParser extends MqttParser {
  _resetState(this: LeanParser & Record<string, unknown>): void {
    this.packet = new Packet();
    this.error = null;
    this._list = new BufferList();
    this._stateCounter = 0;
  }
}

/** A parser for one connection: `parse(chunk)` emits `packet` for each whole packet, `error` for a malformed one. */
export function packetParser(): Parser {
  return new LeanParser().parser();
}
