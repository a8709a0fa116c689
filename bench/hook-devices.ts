// A child process of bench/webhooks.ts: devices that publish events, plain mqtt.js clients (no
// Skyport code), MQTT 3.1.1, one connection each, Nagle's algorithm off, every event at QoS 1
// on devices/<id>/events/<name>. An event's data is JSON {i, t, p}: its id (device k's n-th event
// is k × 10,000,000 + n), the time it was handed to the client (`performance.timeOrigin +
// performance.now()`, ms, which the receiver compares with its own), and padding to the size asked.
//
// Commands over IPC, each answered with one message of the same `seq`:
//   setup {mqttUrl, devices, event, dataBytes}   connects them all
//   flood {window}          every device publishes as fast as its PUBACKs come, `window` unacknowledged at most
//   pace {rate, window}     `rate` events per second in all, spread over the devices (a 1 ms timer),
//                           while each has fewer than `window` unacknowledged (then the pacer falls behind)
//   mark                    the ids acknowledged so far, per device, as [start, end) ranges, and the
//                           publish→PUBACK percentiles since the last mark
//   stop                    stops publishing, waits for the outstanding PUBACKs (120 s at most), then as mark
// A connection that closes fails the run (the process exits 1).
import mqtt from 'mqtt';
import { serveCommands } from './child-commands.js';

const BASE = 10_000_000;
const now = () => performance.timeOrigin + performance.now();

interface Device {
  k: number;
  client: mqtt.MqttClient;
  topic: string;
  next: number;
  /** Every id below this is acknowledged. */
  ackedUpTo: number;
  /** Acknowledged ids above ackedUpTo (a PUBACK out of order). */
  early: Set<number>;
  outstanding: number;
}

let devices: Device[] = [];
let dataBytes = 128;
let running: { stop(): void } | undefined;
let pubacks: number[] = [];
let behindMs = 0;
let published = 0;
const waiters: Array<() => void> = [];

const noDelay = (c: mqtt.MqttClient) => (c.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);

function payloadOf(id: number, t: number): string {
  const head = JSON.stringify({ i: id, t, p: '' });
  const data = JSON.stringify({ i: id, t, p: 'x'.repeat(Math.max(0, dataBytes - head.length)) });
  return JSON.stringify({ data, ttl: 60, private: true });
}

function acked(d: Device, seq: number): void {
  d.outstanding -= 1;
  if (seq === d.ackedUpTo) {
    d.ackedUpTo += 1;
    while (d.early.delete(d.ackedUpTo)) d.ackedUpTo += 1;
  } else {
    d.early.add(seq);
  }
  if (d.outstanding === 0 && devices.every((x) => x.outstanding === 0)) for (const w of waiters.splice(0)) w();
}

function send(d: Device, then?: () => void): void {
  const seq = d.next++;
  const t = now();
  d.outstanding += 1;
  published += 1;
  d.client.publish(d.topic, payloadOf(d.k * BASE + seq, t), { qos: 1 }, (err) => {
    if (err) {
      console.error(`hook-devices: publish failed: ${err.message}`);
      process.exit(1);
    }
    pubacks.push(now() - t);
    acked(d, seq);
    then?.();
  });
}

function flood(window: number): { stop(): void } {
  let stopped = false;
  for (const d of devices) {
    const more = () => { if (!stopped) send(d, more); };
    for (let i = 0; i < window; i++) more();
  }
  return { stop: () => { stopped = true; } };
}

function pace(rate: number, window: number): { stop(): void } {
  const started = now();
  let sent = 0;
  let k = 0;
  const timer = setInterval(() => {
    const t = now();
    const due = Math.floor(((t - started) * rate) / 1000);
    // How late the pacer runs (a busy machine, or PUBACKs that do not come): the events of a
    // late tick go out together, each stamped when it is sent.
    if (due - sent > 1) behindMs = Math.max(behindMs, ((due - sent - 1) * 1000) / rate);
    for (; sent < due; sent++) {
      const d = devices[k % devices.length] as Device;
      // A device holds `window` unacknowledged events at most, as a device's MQTT client does.
      if (d.outstanding >= window) break;
      k += 1;
      send(d);
    }
  }, 1);
  return { stop: () => clearInterval(timer) };
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? null : Math.round((sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))] as number) * 100) / 100);

function mark() {
  const sorted = pubacks.sort((a, b) => a - b);
  const out = {
    at: now(),
    ranges: devices.map((d) => [d.k * BASE, d.k * BASE + d.ackedUpTo] as [number, number]),
    published,
    puback: { count: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: percentile(sorted, 1) },
    behindMs: Math.round(behindMs),
  };
  pubacks = [];
  behindMs = 0;
  return out;
}

type Command =
  | { cmd: 'setup'; mqttUrl: string; devices: Array<{ id: string; secret: string }>; event: string; dataBytes: number }
  | { cmd: 'flood'; window: number }
  | { cmd: 'pace'; rate: number; window: number }
  | { cmd: 'mark' }
  | { cmd: 'stop' };

async function run(c: Command): Promise<unknown> {
  switch (c.cmd) {
    case 'setup': {
      dataBytes = c.dataBytes;
      devices = await Promise.all(c.devices.map(async (d, k) => {
        const client = await mqtt.connectAsync(c.mqttUrl, { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4 });
        noDelay(client);
        client.on('close', () => {
          console.error(`hook-devices: device ${d.id}'s connection closed during the run`);
          process.exit(1);
        });
        return { k, client, topic: `devices/${d.id}/events/${c.event}`, next: 0, ackedUpTo: 0, early: new Set<number>(), outstanding: 0 };
      }));
      return {};
    }
    case 'flood':
      running?.stop();
      running = flood(c.window);
      return {};
    case 'pace':
      running?.stop();
      running = pace(c.rate, c.window);
      return {};
    case 'mark': return mark();
    case 'stop': {
      running?.stop();
      running = undefined;
      if (devices.some((d) => d.outstanding > 0)) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${devices.reduce((a, d) => a + d.outstanding, 0)} events still unacknowledged after 120 s`)), 120_000);
          waiters.push(() => { clearTimeout(timer); resolve(); });
        });
      }
      return mark();
    }
  }
}

serveCommands<Command>(run);
