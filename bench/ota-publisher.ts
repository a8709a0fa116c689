// The baseline of bench/ota.ts: a bare mqtt.js publisher plays the cloud's part of a firmware
// transfer (docs/device-protocol.md, "Firmware updates") over Mosquitto, to the same devices
// (bench/ota-devices.ts) Skyport sends to: the same offer, the same chunks (the same binary
// payload, chunk size and count), the same window of chunks beyond each device's last
// acknowledgement, at most `atOnce` transfers at once. Only Skyport's part differs: a broker
// relays what a client publishes, where Skyport writes to the devices' sockets itself.
import { createHash } from 'node:crypto';
import mqtt from 'mqtt';
import { CHUNK_HEADER_BYTES } from '../src/domain/ota-protocol.js';

export interface BrokerTransfer {
  startedAt: number;
  /** When the publisher heard each device's `done`. */
  doneAt: number;
  chunks: number;
  bytes: number;
}

const now = () => performance.timeOrigin + performance.now();

/** Sends `image` to every device of `deviceIds` through the broker at `brokerUrl`; resolves once each said `done`. */
export async function carryOverBroker(opts: { brokerUrl: string; deviceIds: string[]; image: Buffer; version: number; chunkSize: number; window: number; atOnce: number }): Promise<BrokerTransfer> {
  const { image, chunkSize, window } = opts;
  const sha256 = createHash('sha256').update(image).digest('hex');
  const client = await mqtt.connectAsync(opts.brokerUrl, { clientId: `bench-publisher-${process.pid}`, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4 });
  (client.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);
  await client.subscribeAsync('devices/+/ota/+', { qos: 1 });
  interface Sending { id: string; device: string; next: number; acked: number; ready: boolean }
  const byDevice = new Map<string, Sending>();
  let chunks = 0;
  let bytes = 0;
  let started = 0;
  let done = 0;
  const startedAt = now();

  const pump = (s: Sending) => {
    while (s.ready && s.next < image.length && s.next - s.acked < window * chunkSize) {
      const offset = s.next;
      const end = Math.min(image.length, offset + chunkSize);
      // mqtt.js takes one payload: the header and the bytes are copied together (4 KiB, about a µs).
      const payload = Buffer.allocUnsafe(CHUNK_HEADER_BYTES + end - offset);
      payload.write(s.id, 0, 8, 'latin1');
      payload.writeUInt32BE(offset, 8);
      image.copy(payload, CHUNK_HEADER_BYTES, offset, end);
      client.publish(`devices/${s.device}/cloud/ota/chunk`, payload, { qos: 0 });
      s.next = end;
      chunks += 1;
      bytes += end - offset;
    }
  };

  const start = () => {
    while (started < opts.deviceIds.length && started - done < opts.atOnce) {
      const device = opts.deviceIds[started] as string;
      const id = `b${started.toString(36).padStart(7, '0')}`;
      started += 1;
      byDevice.set(device, { id, device, next: 0, acked: 0, ready: false });
      client.publish(`devices/${device}/cloud/ota/begin`, JSON.stringify({ id, version: opts.version, size: image.length, sha256, chunk_size: chunkSize, window, signature: null, forced: false }), { qos: 1 });
    }
  };

  return new Promise<BrokerTransfer>((resolve, reject) => {
    client.on('close', () => reject(new Error('the baseline publisher lost its connection to Mosquitto')));
    client.on('message', (topic, payload) => {
      const [, device, , leaf] = topic.split('/') as [string, string, string, string];
      const s = byDevice.get(device);
      const m = JSON.parse(payload.toString()) as { id: string; offset?: number; error?: string };
      if (!s || m.id !== s.id) return;
      if (m.error) return reject(new Error(`baseline: device ${device} answered ${leaf} with ${m.error}`));
      if (leaf === 'ready') {
        s.ready = true;
        s.next = s.acked = m.offset ?? 0;
        pump(s);
      } else if (leaf === 'ack') {
        s.acked = Math.max(s.acked, m.offset ?? 0);
        pump(s);
      } else if (leaf === 'done') {
        byDevice.delete(device);
        done += 1;
        if (done === opts.deviceIds.length) {
          const doneAt = now();
          client.removeAllListeners('close');
          void client.endAsync().then(() => resolve({ startedAt, doneAt, chunks, bytes }));
          return;
        }
        start();
      }
    });
    start();
  });
}
