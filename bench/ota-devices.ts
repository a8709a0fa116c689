// A child process of bench/ota.ts: lean devices that take firmware updates, plain mqtt.js clients
// (no Skyport code), MQTT 3.1.1, one connection each, Nagle's algorithm off, written from
// docs/device-protocol.md ("Firmware updates") alone. Each subscribes to devices/<id>/cloud/# at
// QoS 1 and, on an offer (`cloud/ota/begin`), says `ready` with what it holds of that image (by
// its SHA-256), takes the chunks in order into a running SHA-256 (as a device writes them to
// flash: nothing of the image is kept in memory), acknowledges every half window (QoS 0), and once
// the whole image is held checks its SHA-256 and says `done` (QoS 1). Against Skyport it then
// restarts: the connection ends, it connects again, subscribes, and says `hello` with the new
// version (QoS 1). Against the baseline (a bare publisher over Mosquitto playing the cloud's part)
// it does the same up to `done`, and does not restart.
//
// Commands over IPC, each answered with one message of the same `seq`:
//   setup {mqttUrl, devices, version, restart, inFlight, hello}   closes the devices of an earlier
//                          setup, connects these (inFlight at once), subscribes, says hello if asked
//   add {device, cutAt}    one more device; it drops its connection (a socket destroyed, no
//                          DISCONNECT) the first time it holds `cutAt` of an image, and connects again 500 ms later
//   status                 counts and times (ms, performance.timeOrigin + performance.now()) so far
//   close                  ends every connection
// A connection that closes unasked fails the run (the process exits 1); one that cannot be made
// (refused, no CONNACK within 60 s) is tried again after 1 s, five times at most, and counted.
import { createHash, type Hash } from 'node:crypto';
import mqtt from 'mqtt';
import { serveCommands } from './child-commands.js';

const now = () => performance.timeOrigin + performance.now();
const noDelay = (c: mqtt.MqttClient) => (c.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);

interface Offer { id: string; version: number; size: number; sha256: string; chunk_size: number; window: number }

interface Device {
  id: string;
  secret: string;
  version: number;
  client: mqtt.MqttClient | null;
  /** The image being received (by its SHA-256): kept across connections, so a transfer resumes. */
  image: { sha256: string; size: number; hash: Hash; held: number } | null;
  offer: Offer | null;
  acked: number;
  resyncing: boolean;
  /** Drop the connection once this share of an image is held (the resume measurement). */
  cutAt: number | null;
  closing: boolean;
  /** Image bytes taken from chunks, over every connection. */
  received: number;
  offers: number;
  beganAt: number | null;
  heldAt: number | null;
  backAt: number | null;
  failed: string | null;
}

let url = '';
let restart = true;
let devices: Device[] = [];

function fail(message: string): never {
  console.error(`ota-devices: ${message}`);
  process.exit(1);
}

/** Connection attempts that failed (refused, or no CONNACK in time), tried again as a device does. */
let retries = 0;
const RETRIES = 5;

async function connect(d: Device, hello: boolean): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectOnce(d, hello);
    } catch (err) {
      if (attempt >= RETRIES) fail(`device ${d.id} could not connect (${attempt} attempts): ${(err as Error).message}`);
      retries += 1;
      console.error(`ota-devices: device ${d.id}: ${(err as Error).message}; trying again in 1 s`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

async function connectOnce(d: Device, hello: boolean): Promise<void> {
  const client = mqtt.connect(url, { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0, keepalive: 60, protocolVersion: 4, connectTimeout: 60_000 });
  // Errors always have a listener (an unheard one would end the process): a failed connect is
  // retried by the caller, and a connection that closes later is judged by its close handler.
  client.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    const settle = (err?: Error) => {
      client.off('connect', onConnect).off('error', settle).off('close', onClose);
      if (!err) return resolve();
      client.end(true);
      reject(err);
    };
    const onConnect = () => settle();
    const onClose = () => settle(new Error('the connection closed before its CONNACK'));
    client.on('connect', onConnect).on('error', settle).on('close', onClose);
  });
  noDelay(client);
  d.client = client;
  client.on('close', () => {
    if (d.client === client && !d.closing) fail(`device ${d.id}'s connection closed during the run`);
  });
  client.on('message', (topic, payload) => {
    if (topic.endsWith('/cloud/ota/chunk')) chunk(d, payload);
    else if (topic.endsWith('/cloud/ota/begin')) begin(d, JSON.parse(payload.toString()) as Offer);
  });
  await client.subscribeAsync(`devices/${d.id}/cloud/#`, { qos: 1 });
  if (hello) await client.publishAsync(`devices/${d.id}/hello`, JSON.stringify({ functions: [], variables: {}, firmware_version: d.version, system_firmware_version: '5.8.0' }), { qos: 1 });
}

function send(d: Device, leaf: 'ready' | 'ack' | 'done', body: object): void {
  d.client?.publish(`devices/${d.id}/ota/${leaf}`, JSON.stringify(body), { qos: leaf === 'ack' ? 0 : 1 });
}

function begin(d: Device, offer: Offer): void {
  d.offers += 1;
  d.beganAt ??= now();
  if (d.image?.sha256 !== offer.sha256 || d.image.size !== offer.size) d.image = { sha256: offer.sha256, size: offer.size, hash: createHash('sha256'), held: 0 };
  d.offer = offer;
  d.acked = d.image.held;
  d.resyncing = false;
  send(d, 'ready', { id: offer.id, offset: d.image.held });
}

function chunk(d: Device, payload: Buffer): void {
  const offer = d.offer;
  const image = d.image;
  if (!offer || !image || payload.toString('latin1', 0, 8) !== offer.id) return;
  const offset = payload.readUInt32BE(8);
  if (offset !== image.held) {
    // A repeat is dropped; a gap makes the device say where it stands, once.
    if (offset > image.held && !d.resyncing) {
      d.resyncing = true;
      send(d, 'ready', { id: offer.id, offset: image.held });
    }
    return;
  }
  d.resyncing = false;
  const bytes = payload.subarray(12);
  image.hash.update(bytes);
  image.held += bytes.length;
  d.received += bytes.length;
  const whole = image.held === image.size;
  if (whole || image.held - d.acked >= Math.max(1, Math.floor(offer.window / 2)) * offer.chunk_size) {
    d.acked = image.held;
    send(d, 'ack', { id: offer.id, offset: image.held });
  }
  if (whole) return void finish(d, offer, image);
  if (d.cutAt !== null && image.held >= d.cutAt * image.size) {
    d.cutAt = null;
    void cut(d);
  }
}

/** The connection drops as a device losing its network does: no DISCONNECT; it comes back 500 ms later. */
async function cut(d: Device): Promise<void> {
  const client = d.client as mqtt.MqttClient;
  d.client = null;
  d.offer = null;
  client.stream.destroy();
  client.end(true);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await connect(d, true);
}

async function finish(d: Device, offer: Offer, image: NonNullable<Device['image']>): Promise<void> {
  d.offer = null;
  d.image = null;
  const sha = image.hash.digest('hex');
  if (sha !== offer.sha256) {
    d.failed = 'sha256_mismatch';
    return send(d, 'done', { id: offer.id, error: 'sha256_mismatch' });
  }
  const client = d.client as mqtt.MqttClient;
  await client.publishAsync(`devices/${d.id}/ota/done`, JSON.stringify({ id: offer.id }), { qos: 1 });
  d.heldAt = now();
  if (!restart) return;
  // Applies it: restarts (a clean DISCONNECT), and says hello running the new version.
  d.closing = true;
  await client.endAsync();
  d.closing = false;
  d.version = offer.version;
  await connect(d, true);
  d.backAt = now();
}

function fresh(who: { id: string; secret: string }, version: number, cutAt: number | null): Device {
  return { id: who.id, secret: who.secret, version, client: null, image: null, offer: null, acked: 0, resyncing: false, cutAt, closing: false, received: 0, offers: 0, beganAt: null, heldAt: null, backAt: null, failed: null };
}

async function closeAll(): Promise<void> {
  await Promise.all(devices.map(async (d) => {
    d.closing = true;
    await d.client?.endAsync();
  }));
  devices = [];
}

const times = (xs: Array<number | null>) => {
  const t = xs.filter((x): x is number => x !== null);
  return t.length === 0 ? null : { first: Math.min(...t), last: Math.max(...t) };
};

type Command =
  | { cmd: 'setup'; mqttUrl: string; devices: Array<{ id: string; secret: string }>; version: number; restart: boolean; inFlight: number; hello: boolean }
  | { cmd: 'add'; device: { id: string; secret: string }; version: number; cutAt: number }
  | { cmd: 'status' }
  | { cmd: 'close' };

async function run(c: Command): Promise<unknown> {
  switch (c.cmd) {
    case 'setup': {
      await closeAll();
      retries = 0;
      url = c.mqttUrl;
      restart = c.restart;
      devices = c.devices.map((who) => fresh(who, c.version, null));
      let next = 0;
      await Promise.all(Array.from({ length: Math.min(c.inFlight, devices.length) }, async () => {
        while (next < devices.length) await connect(devices[next++] as Device, c.hello);
      }));
      return { connected: devices.length };
    }
    case 'add': {
      const d = fresh(c.device, c.version, c.cutAt);
      devices.push(d);
      await connect(d, true);
      return {};
    }
    case 'status': {
      const began = times(devices.map((d) => d.beganAt));
      const held = times(devices.map((d) => d.heldAt));
      const back = times(devices.map((d) => d.backAt));
      return {
        devices: devices.length,
        began: devices.filter((d) => d.beganAt !== null).length,
        held: devices.filter((d) => d.heldAt !== null).length,
        back: devices.filter((d) => d.backAt !== null).length,
        failed: devices.filter((d) => d.failed !== null).length,
        offers: devices.reduce((n, d) => n + d.offers, 0),
        received: devices.reduce((n, d) => n + d.received, 0),
        retries,
        firstBeganAt: began?.first ?? null, lastHeldAt: held?.last ?? null, lastBackAt: back?.last ?? null,
        /** When each device held its image, for the progress over time. */
        heldTimes: devices.flatMap((d) => (d.heldAt === null ? [] : [Math.round(d.heldAt)])),
      };
    }
    case 'close':
      await closeAll();
      return {};
  }
}

serveCommands<Command>(run);
