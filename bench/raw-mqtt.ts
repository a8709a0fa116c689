// MQTT 3.1.1 over a plain socket with mqtt-packet, for the load side of bench/config-fanout.ts,
// which holds thousands of connections in a few processes: an mqtt.js client costs far more
// than the connection costs the server, and would make the load side the bottleneck.
import { connect, type Socket } from 'node:net';
import mqttPacket, { type Packet } from 'mqtt-packet';

export interface RawConnection {
  socket: Socket;
  /** QoS 0: the answer (an acknowledgement) is the proof of delivery in these benchmarks. */
  publish(topic: string, payload: string): void;
  /** Sends SUBSCRIBE (QoS 0) and resolves at its SUBACK. */
  subscribe(filters: string[]): Promise<void>;
  /** DISCONNECT, then the socket is closed; resolves once it is. */
  end(): Promise<void>;
}

export interface RawOptions {
  host: string;
  port: number;
  clientId: string;
  username?: string;
  password?: string;
  /** Every PUBLISH that arrives after the CONNACK. */
  onPublish(topic: string, payload: Buffer): void;
  /** The connection closed after it was accepted, without end() (lost). */
  onLost?(): void;
}

const DISCONNECT = mqttPacket.generate({ cmd: 'disconnect' });

/**
 * Opens a connection and resolves at the CONNACK with its return code (negative: a socket error
 * -2, closed before the CONNACK -3, a packet that does not parse -4). `connection` is set when
 * the code is 0.
 */
export function openRaw(o: RawOptions): Promise<{ code: number; connection?: RawConnection }> {
  return new Promise((resolve) => {
    const socket = connect({ host: o.host, port: o.port });
    // Small writes (an acknowledgement) must not wait for the peer's delayed ACK.
    socket.setNoDelay(true);
    const parser = mqttPacket.parser();
    let settled = false;
    let accepted = false;
    let ending = false;
    let nextMessageId = 1;
    const subacks = new Map<number, () => void>();
    const settle = (code: number, connection?: RawConnection) => {
      if (settled) return;
      settled = true;
      resolve(connection ? { code, connection } : { code });
    };
    const connection: RawConnection = {
      socket,
      publish: (topic, payload) => {
        socket.write(mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, dup: false, retain: false }));
      },
      subscribe: (filters) => new Promise<void>((done) => {
        const messageId = nextMessageId++;
        subacks.set(messageId, done);
        socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId, subscriptions: filters.map((topic) => ({ topic, qos: 0 })) }));
      }),
      end: () => new Promise<void>((done) => {
        ending = true;
        if (socket.destroyed) return done();
        socket.once('close', () => done());
        socket.end(DISCONNECT);
      }),
    };
    parser.on('packet', (p: Packet) => {
      if (p.cmd === 'connack') {
        accepted = p.returnCode === 0;
        settle(p.returnCode ?? -1, accepted ? connection : undefined);
      }
      else if (p.cmd === 'publish') o.onPublish(p.topic, typeof p.payload === 'string' ? Buffer.from(p.payload) : p.payload);
      else if (p.cmd === 'suback') {
        subacks.get(p.messageId ?? 0)?.();
        subacks.delete(p.messageId ?? 0);
      }
    });
    parser.on('error', () => {
      settle(-4);
      socket.destroy();
    });
    socket.on('data', (d) => parser.parse(d));
    socket.on('error', () => settle(-2));
    socket.on('close', () => {
      if (accepted && !ending) o.onLost?.();
      settle(-3);
    });
    socket.on('connect', () => {
      socket.write(mqttPacket.generate({
        cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 0, clientId: o.clientId,
        ...(o.username !== undefined ? { username: o.username } : {}),
        ...(o.password !== undefined ? { password: Buffer.from(o.password) } : {}),
      }));
    });
  });
}
