// The firmware update benchmark (docs/benchmarks.md, "Firmware updates"): a product's image to
// its connected devices, until every device runs the new version, beside a bare publisher
// carrying the same chunks over Mosquitto to the same devices in the same run; the server's memory
// during the transfer; and a transfer cut at half way, resumed, with the bytes sent counted.
//
//   npm run bench:ota                              1,000 devices, a 1 MiB image, both stores
//   npm run bench:ota -- --store embedded          one store: embedded, postgres or both
//   npm run bench:ota -- --quick                   100 devices, a 256 KiB image: a smoke run
//   npm run bench:ota -- --devices 500 --image-bytes 524288
//   npm run bench:ota -- --probe                   also a CPU profile of the server over the transfer
//
// Processes: Skyport (compiled dist/, as an operator starts it: its defaults, LOG_LEVEL at its
// default, METRICS=open for the bytes-sent counter), the devices (bench/ota-devices.ts, plain
// mqtt.js) in --device-processes processes of their own, Mosquitto (bench/mosquitto.ts), and the
// baseline's publisher (bench/ota-publisher.ts) in this one.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import reader from 'binary-version-reader';
import { SETTINGS } from '../src/config/settings.js';
import { DEFAULT_CHUNK_BYTES, DEFAULT_WINDOW } from '../src/domain/ota-protocol.js';
import { startCommandChild, type CommandChild } from './command-child.js';
import {
  DEFAULT_ADMIN_URL, ROOT, api, commandLine, cpuSeconds, gitCommit, inspectorSession, onCleanup, option, round2, rssKb, runBenchmark, sleep, startSkyport, stopChild,
  userWithProduct, type Skyport, type Store,
} from './harness.js';
import { startMosquitto } from './mosquitto.js';
import { carryOverBroker } from './ota-publisher.js';
import { attachProbe, type PhaseProbe } from './probe.js';

const USAGE = 'usage: npm run bench:ota -- [--quick] [--store embedded|postgres|both] [--devices 1000] [--image-bytes 1048576] [--device-processes 2] [--baseline-at-once N] [--probe] [--pg-admin-url URL]';
const { args, quick, stores } = commandLine(USAGE, 'both');
const DEVICES = Number(option(args, 'devices') ?? (quick ? 100 : 1000));
const IMAGE_BYTES = Number(option(args, 'image-bytes') ?? (quick ? 256 * 1024 : 1024 * 1024));
const PROCESSES = Number(option(args, 'device-processes') ?? 2);
/** The server's transfers at once (FIRMWARE_TRANSFERS at its default): the baseline runs as many at once unless told. */
const settingDefault = (env: string) => String(SETTINGS.find((s) => s.env === env)?.default);
const SERVER_TRANSFERS = Number(settingDefault('FIRMWARE_TRANSFERS'));
const BASELINE_AT_ONCE = Number(option(args, 'baseline-at-once') ?? SERVER_TRANSFERS);
const PROBE = args.includes('--probe');
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
for (const [n, v] of Object.entries({ devices: DEVICES, 'image-bytes': IMAGE_BYTES, 'device-processes': PROCESSES, 'baseline-at-once': BASELINE_AT_ONCE })) {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${n} must be a whole positive number\n${USAGE}`);
}
if (IMAGE_BYTES < 4096 || IMAGE_BYTES > 8 * 1024 * 1024) throw new Error('--image-bytes: from 4096 to 8388608 (FIRMWARE_MAX_BYTES\'s default)');

/** The version the devices run, and the one released. */
const OLD = 1;
const NEW = 2;
const BULK = 10_000;
/** Connects at once per device process. */
const IN_FLIGHT = 100;
/** How long every device may take to update, and the resumed one. */
const BOUND_MS = 15 * 60_000;
const GOAL_RATIO = 0.5;
/** A cut at half way that started over would send 1.5 × the image; resumed, 1 × and the chunks lost in flight at the cut. */
const GOAL_RESUME = 1.5;

const now = () => performance.timeOrigin + performance.now();
const loads = () => loadavg().map((l) => round2(l));
const mib = (bytes: number) => round2(bytes / 2 ** 20);

let failure: Error | undefined;
function check(): void {
  if (failure) throw failure;
}

// ---------------------------------------------------------------------------------------------
// The image and the devices.

/** A module binary of exactly `bytes` (binary-version-reader's test helper: a product id and version in its suffix, a CRC-32 that holds). */
function firmwareImage(productId: number, version: number, bytes: number): Buffer {
  const make = (dataSize: number) => reader.firmwareTestHelper.createFirmwareBinary({ productId, productVersion: version, platformId: 26, dataSize });
  const overhead = make(1024).length - 1024;
  const image = make(bytes - overhead);
  if (image.length !== bytes) throw new Error(`the image is ${image.length} bytes, not ${bytes}`);
  return image;
}

async function uploadImage(sky: Skyport, token: string, productId: number, image: Buffer, version: number): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([image]), 'firmware.bin');
  form.append('version', String(version));
  form.append('title', `bench v${version}`);
  const res = await fetch(`${sky.url}/v1/products/${productId}/firmware`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  if (res.status !== 201) throw new Error(`firmware upload: ${res.status} ${(await res.text()).slice(0, 300)}`);
}

interface Status { devices: number; began: number; held: number; back: number; failed: number; offers: number; received: number; retries: number; firstBeganAt: number | null; lastHeldAt: number | null; lastBackAt: number | null; heldTimes: number[] }

/** The device processes, as one. */
function fleetOf(children: CommandChild[]) {
  return {
    async setup(mqttUrl: string, identities: Array<{ id: string; secret: string }>, restart: boolean, hello: boolean): Promise<void> {
      const per = Math.ceil(identities.length / children.length);
      await Promise.all(children.map((c, k) => c.call({ cmd: 'setup', mqttUrl, devices: identities.slice(k * per, (k + 1) * per), version: OLD, restart, inFlight: IN_FLIGHT, hello }, 300_000)));
    },
    async status(): Promise<Status> {
      const all = await Promise.all(children.map((c) => c.call<Status>({ cmd: 'status' })));
      const sum = (k: 'devices' | 'began' | 'held' | 'back' | 'failed' | 'offers' | 'received' | 'retries') => all.reduce((n, s) => n + s[k], 0);
      const pick = (k: 'firstBeganAt' | 'lastHeldAt' | 'lastBackAt', f: (...xs: number[]) => number) => {
        const xs = all.map((s) => s[k]).filter((x): x is number => x !== null);
        return xs.length ? f(...xs) : null;
      };
      return {
        devices: sum('devices'), began: sum('began'), held: sum('held'), back: sum('back'), failed: sum('failed'), offers: sum('offers'), received: sum('received'), retries: sum('retries'),
        firstBeganAt: pick('firstBeganAt', Math.min), lastHeldAt: pick('lastHeldAt', Math.max), lastBackAt: pick('lastBackAt', Math.max),
        heldTimes: all.flatMap((s) => s.heldTimes),
      };
    },
    close: () => Promise.all(children.map((c) => c.call({ cmd: 'close' }))),
  };
}
type Fleet = ReturnType<typeof fleetOf>;

/** Polls the devices until `done` says so; throws past the bound or when a device failed its check. */
async function until(fleet: Fleet, done: (s: Status) => boolean, what: string): Promise<Status> {
  const deadline = now() + BOUND_MS;
  for (;;) {
    check();
    const s = await fleet.status();
    if (s.failed > 0) throw new Error(`${what}: ${s.failed} devices found the image's SHA-256 wrong`);
    if (done(s)) return s;
    if (now() > deadline) throw new Error(`${what}: not within ${BOUND_MS / 60_000} minutes (${JSON.stringify({ ...s, heldTimes: undefined })})`);
    await sleep(100);
  }
}

/** Devices holding the whole image at each second from `t0`. */
function bySecond(times: number[], t0: number): number[] {
  const out: number[] = [];
  for (const t of times) {
    const k = Math.max(0, Math.ceil((t - t0) / 1000) - 1);
    while (out.length <= k) out.push(0);
    out[k] = (out[k] as number) + 1;
  }
  let n = 0;
  return out.map((c) => (n += c));
}

/** A process's RSS in KiB, or null once it is gone (a child that failed: the run reports why). */
function rssOf(pid: number): number | null {
  try {
    return rssKb(pid);
  } catch {
    return null;
  }
}

/** RSS of the processes every 250 ms, in KiB: the first reading, the peak and the last. */
function rssSampler(pids: Record<string, number>) {
  const first: Record<string, number> = {};
  const peak: Record<string, number> = {};
  const read = () => {
    for (const [k, pid] of Object.entries(pids)) {
      const v = rssOf(pid);
      if (v === null) continue;
      first[k] ??= v;
      peak[k] = Math.max(peak[k] ?? 0, v);
    }
  };
  read();
  const timer = setInterval(read, 250);
  return () => {
    clearInterval(timer);
    read();
    const last = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, rssOf(pid) ?? 0]));
    return Object.fromEntries(Object.keys(pids).map((k) => [k, { beforeMb: mib((first[k] ?? 0) * 1024), peakMb: mib((peak[k] ?? 0) * 1024), afterMb: mib((last[k] ?? 0) * 1024) }]));
  };
}

/** The server's process.memoryUsage() every second through its inspector (--probe): the peaks, in MiB. */
async function heapSampler(inspectorUrl: string) {
  const { ws, send } = await inspectorSession(inspectorUrl);
  const peak: Record<string, number> = {};
  let first: Record<string, number> | null = null;
  const read = async () => {
    const r = await send<{ result: { value: string } }>('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
    const m = JSON.parse(r.result.value) as Record<string, number>;
    first ??= Object.fromEntries(Object.entries(m).map(([k, v]) => [k, mib(v)]));
    for (const [k, v] of Object.entries(m)) peak[k] = Math.max(peak[k] ?? 0, mib(v));
  };
  await read();
  const timer = setInterval(() => { void read().catch(() => undefined); }, 1000);
  return async () => {
    clearInterval(timer);
    await read();
    ws.close();
    return { before: first, peak };
  };
}

/** CPU seconds of the device processes from now on. */
function cpuOf(children: CommandChild[]): () => number {
  const sum = () => children.reduce((n, c) => n + (cpuSeconds(c.child.pid) ?? 0), 0);
  const first = sum();
  return () => round2(sum() - first);
}

async function bytesSent(sky: Skyport): Promise<number> {
  const text = await (await fetch(`${sky.url}/metrics`)).text();
  const m = /^skyport_firmware_bytes_sent_total(?:\{[^}]*\})? (\d+(?:\.\d+)?(?:e\+?\d+)?)$/m.exec(text);
  if (!m) throw new Error('GET /metrics has no skyport_firmware_bytes_sent_total');
  return Number(m[1]);
}

// ---------------------------------------------------------------------------------------------
// The baseline: Mosquitto.

async function baseline(fleet: Fleet, children: CommandChild[], image: Buffer) {
  const broker = await startMosquitto();
  const brokerUrl = `mqtt://${broker.host}:${broker.port}`;
  const tag = Math.random().toString(16).slice(2, 8);
  const identities = Array.from({ length: DEVICES }, (_, i) => ({ id: `bench${tag}${String(i).padStart(6, '0')}`, secret: 'x' }));
  await fleet.setup(brokerUrl, identities, false, false);
  const rss = rssSampler({ mosquitto: broker.pid });
  const cpu0 = cpuSeconds(broker.pid);
  const devicesCpu = cpuOf(children);
  const publisher0 = process.cpuUsage();
  const sent = await carryOverBroker({ brokerUrl, deviceIds: identities.map((d) => d.id), image, version: NEW, chunkSize: DEFAULT_CHUNK_BYTES, window: DEFAULT_WINDOW, atOnce: BASELINE_AT_ONCE });
  const s = await until(fleet, (x) => x.held === DEVICES, 'baseline');
  const cpu1 = cpuSeconds(broker.pid);
  const publisher = process.cpuUsage(publisher0);
  const devicesCpuS = devicesCpu();
  const memory = rss();
  await fleet.close();
  await broker.stop();
  const seconds = ((s.lastHeldAt as number) - sent.startedAt) / 1000;
  const row = {
    seconds: round2(seconds),
    /** Image bytes that reached the devices per second, in MiB/s. */
    rateMiBs: round2(mib(DEVICES * image.length) / seconds),
    chunks: sent.chunks,
    received: s.received,
    connectRetries: s.retries,
    mosquittoCpuS: cpu0 === null || cpu1 === null ? null : round2(cpu1 - cpu0),
    /** This process's CPU over the transfer: the publisher, and the polling of the devices. */
    publisherCpuS: round2((publisher.user + publisher.system) / 1e6),
    devicesCpuS,
    mosquittoRssMb: memory.mosquitto,
    heldBySecond: bySecond(s.heldTimes, sent.startedAt),
    atOnce: BASELINE_AT_ONCE,
    load: loads(),
  };
  console.log(`  baseline, Mosquitto: ${DEVICES} devices held the ${image.length}-byte image ${row.seconds} s after the publisher started (${row.rateMiBs} MiB/s; ${row.chunks} chunks, ${BASELINE_AT_ONCE} transfers at once); Mosquitto ${row.mosquittoCpuS} s CPU, the publisher ${row.publisherCpuS} s, the devices ${row.devicesCpuS} s; RSS ${row.mosquittoRssMb?.beforeMb} → ${row.mosquittoRssMb?.peakMb} MB at most`);
  return row;
}

// ---------------------------------------------------------------------------------------------
// One store.

async function runStore(store: Store, fleet: Fleet, children: CommandChild[], size: number) {
  const sky = await startSkyport(store, {
    adminUrl: ADMIN, build: ROOT, name: `skyport (${store})`,
    // LOG_LEVEL at its default (the harness lowers it otherwise), and the bytes-sent counter on
    // (docs/operations.md, "Metrics"); the per-address limits are off, as for every benchmark.
    env: { LOG_LEVEL: settingDefault('LOG_LEVEL'), METRICS: 'open' },
    ...(PROBE ? { nodeArgs: ['--inspect=127.0.0.1:0', '--import', join(ROOT, 'bench', 'count-queries.mjs')] } : {}),
  });
  const { token, productId } = await userWithProduct(sky.url, 'ota');
  const image = firmwareImage(productId, NEW, size);
  await uploadImage(sky, token, productId, image, NEW);
  const identities: Array<{ id: string; secret: string }> = [];
  while (identities.length < DEVICES + 1) {
    const { devices } = await api<{ devices: Array<{ id: string; device_secret: string }> }>(`${sky.url}/v1/products/${productId}/device_identities`, { token, json: { quantity: Math.min(BULK, DEVICES + 1 - identities.length) } });
    identities.push(...devices.map((d) => ({ id: d.id, secret: d.device_secret })));
  }
  const resumer = identities.pop() as { id: string; secret: string };
  const mqttUrl = `mqtt://${sky.mqttHost}:${sky.mqttPort}`;
  await fleet.setup(mqttUrl, identities, true, true);
  // Every hello looked at (the devices show their version) before the release.
  const shown = async (version: number) => {
    let n = 0;
    for (let page = 1; ; page++) {
      const r = await api<{ devices: Array<{ firmware_version?: number | null }>; meta: { total_pages: number } }>(`${sky.url}/v1/products/${productId}/devices?per_page=1000&page=${page}`, { token });
      n += r.devices.filter((d) => d.firmware_version === version).length;
      if (page >= r.meta.total_pages) return n;
    }
  };
  for (let t = now(); (await shown(OLD)) < DEVICES; await sleep(250)) if (now() - t > 60_000) throw new Error('the devices\' hellos were not all shown within 60 s');
  await sleep(1000);

  let probe: Awaited<ReturnType<typeof attachProbe>> | undefined;
  let heap: Awaited<ReturnType<typeof heapSampler>> | undefined;
  if (PROBE) {
    if (!sky.inspectorUrl) throw new Error('--probe: the server printed no inspector address');
    probe = await attachProbe(sky.inspectorUrl);
    onCleanup(() => probe?.close());
    heap = await heapSampler(sky.inspectorUrl);
    await probe.start();
  }
  const sent0 = await bytesSent(sky);
  const rss = rssSampler({ server: sky.pid, ...Object.fromEntries(children.map((c, k) => [`devices${k}`, c.child.pid ?? 0])) });
  const cpu0 = cpuSeconds(sky.pid);
  const devicesCpu = cpuOf(children);
  const t0 = now();
  const release = await api<Record<string, unknown>>(`${sky.url}/v1/products/${productId}/firmware/release`, { method: 'PUT', token, json: { version: NEW, product_default: true, intelligent: true } });
  const s = await until(fleet, (x) => x.back === DEVICES, `${store}: every device back on version ${NEW}`);
  const devicesBack = now();
  let shownAt: number | null = null;
  for (; shownAt === null; await sleep(200)) {
    check();
    if ((await shown(NEW)) === DEVICES) shownAt = now();
    else if (now() - devicesBack > 60_000) throw new Error('the API did not show every device on the new version within 60 s of their hellos');
  }
  const cpu1 = cpuSeconds(sky.pid);
  const devicesCpuS = devicesCpu();
  const memory = rss();
  const heapUsage = await heap?.();
  const probed: PhaseProbe | undefined = await probe?.stop(join(ROOT, 'bench', 'results', `ota-${store}-${Date.now()}.cpuprofile`));
  const sent1 = await bytesSent(sky);

  const transferS = ((s.lastHeldAt as number) - t0) / 1000;
  const updateS = ((s.lastBackAt as number) - t0) / 1000;
  const shownS = (shownAt - t0) / 1000;
  const total = DEVICES * image.length;

  // The resume: one more device on the old version; its connection drops at half way, it connects again and resumes.
  const r0 = await bytesSent(sky);
  await children[0]?.call({ cmd: 'add', device: resumer, version: OLD, cutAt: 0.5 });
  const resumed = await until(fleet, (x) => x.back === DEVICES + 1, `${store}: the resumed device back on version ${NEW}`);
  const r1 = await bytesSent(sky);
  await fleet.close();
  await stopChild(sky.child, 30_000);

  const row = {
    store,
    release,
    firstOfferS: s.firstBeganAt === null ? null : round2((s.firstBeganAt - t0) / 1000),
    /** Every device held the whole image (said done). */
    transferS: round2(transferS),
    /** Every device restarted and said hello on the new version. */
    updateS: round2(updateS),
    /** The API listed every device on the new version (polled every 200 ms once the devices were back). */
    shownS: round2(shownS),
    transferRateMiBs: round2(mib(total) / transferS),
    updateRateMiBs: round2(mib(total) / updateS),
    bytesSent: sent1 - sent0,
    offers: s.offers,
    received: s.received,
    connectRetries: s.retries,
    serverCpuS: cpu0 === null || cpu1 === null ? null : round2(cpu1 - cpu0),
    devicesCpuS,
    rssMb: memory,
    ...(heapUsage ? { heapMb: heapUsage } : {}),
    /** The image held once per device would be DEVICES × its size. */
    imageTimesDevicesMb: mib(total),
    heldBySecond: bySecond(s.heldTimes, t0),
    resume: { imageBytes: image.length, bytesSent: r1 - r0, ratio: round2((r1 - r0) / image.length), beyondImage: r1 - r0 - image.length, offers: resumed.offers - s.offers, received: resumed.received - s.received },
    load: loads(),
    ...(probed ? { probe: probed } : {}),
  };
  console.log(`  skyport (${store}): first offer after ${row.firstOfferS} s; every device held the image after ${row.transferS} s (${row.transferRateMiBs} MiB/s), ran version ${NEW} after ${row.updateS} s (${row.updateRateMiBs} MiB/s), shown by the API after ${row.shownS} s; ${row.bytesSent} bytes sent (${round2(row.bytesSent / total)} × the images); server ${row.serverCpuS} s CPU (the devices ${row.devicesCpuS} s), RSS ${row.rssMb.server?.beforeMb} → ${row.rssMb.server?.peakMb} MB at most (the image once per device: ${row.imageTimesDevicesMb} MB)`);
  console.log(`  resume (${store}): cut at half way, ${row.resume.offers} offers; the server sent ${row.resume.bytesSent} bytes for the ${image.length}-byte image (${row.resume.ratio} ×; ${row.resume.beyondImage} bytes more than the image: chunks on their way when the connection dropped)`);
  return row;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'run.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm run bench:ota does)');
  const date = new Date().toISOString();
  const load0 = loads();
  console.log(`Firmware update benchmark: stores ${stores.join(', ')}; ${DEVICES} devices in ${PROCESSES} processes; a ${IMAGE_BYTES}-byte image in ${DEFAULT_CHUNK_BYTES}-byte chunks, window ${DEFAULT_WINDOW}; ${cpus().length} cores, load average ${load0.join(' ')}`);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  const children = await Promise.all(Array.from({ length: PROCESSES }, (_, k) => startCommandChild('ota-devices.ts', `devices ${k}`, (err) => { failure ??= err; })));
  const fleet = fleetOf(children);

  // The baseline runs just before each store's run, so that each ratio compares runs minutes
  // apart on a machine whose load moves. Its image is the same size (the broker does not look in it).
  const rows: Array<Awaited<ReturnType<typeof runStore>> & { baseline: Awaited<ReturnType<typeof baseline>>; ratio: { transfer: number; update: number } }> = [];
  for (const store of stores) {
    console.log(`${store} store, and its baseline just before:`);
    const base = await baseline(fleet, children, firmwareImage(1, NEW, IMAGE_BYTES));
    check();
    const row = await runStore(store, fleet, children, IMAGE_BYTES);
    rows.push({ ...row, baseline: base, ratio: { transfer: round2(row.transferRateMiBs / base.rateMiBs), update: round2(row.updateRateMiBs / base.rateMiBs) } });
    check();
  }
  await Promise.all(children.map((c) => c.stop()));

  const load1 = loads();
  const commit = gitCommit();
  const lines = [
    '| run | store | all images held, s | all on the new version, s | MiB/s (to the new version) | ratio to Mosquitto (held / new version) | bytes sent ÷ images | server CPU s | server RSS before → peak MB | resume: bytes sent ÷ image | load |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rows.flatMap((r) => [
      `| Mosquitto + bare publisher, just before | - | ${r.baseline.seconds} | - | ${r.baseline.rateMiBs} | 1 | - | Mosquitto ${r.baseline.mosquittoCpuS}, publisher ${r.baseline.publisherCpuS} | (Mosquitto ${r.baseline.mosquittoRssMb?.beforeMb} → ${r.baseline.mosquittoRssMb?.peakMb}) | - | ${r.baseline.load[0]} |`,
      `| Skyport | ${r.store} | ${r.transferS} | ${r.updateS} | ${r.updateRateMiBs} | ${r.ratio.transfer} / ${r.ratio.update} | ${round2(r.bytesSent / (DEVICES * IMAGE_BYTES))} | ${r.serverCpuS} | ${r.rssMb.server?.beforeMb} → ${r.rssMb.server?.peakMb} | ${r.resume.ratio} | ${r.load[0]} |`,
    ]),
  ];
  // A copy of the image per transfer under way would add at least this much to the server's memory.
  const copies = mib(Math.min(DEVICES, SERVER_TRANSFERS) * IMAGE_BYTES);
  const growth = (r: { rssMb: Record<string, { beforeMb: number; peakMb: number }> }) => round2((r.rssMb.server?.peakMb ?? Infinity) - (r.rssMb.server?.beforeMb ?? 0));
  const goals = rows.flatMap((r) => [
    { goal: `every device on the new version at >= ${GOAL_RATIO} x Mosquitto's rate`, store: r.store, value: String(r.ratio.update), met: r.ratio.update >= GOAL_RATIO },
    { goal: `the image held once: the server's RSS grows by less than half of a copy per transfer under way (${copies} MB)`, store: r.store, value: `${growth(r)} MB`, met: growth(r) < copies / 2 },
    { goal: `a transfer cut at half way resumes: bytes sent < ${GOAL_RESUME} x the image (what sending it all again would cost)`, store: r.store, value: String(r.resume.ratio), met: r.resume.ratio < GOAL_RESUME },
  ]);
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, load average ${load0[0]} before, ${load1[0]} after\n\n${lines.join('\n')}\n`);
  for (const g of goals) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal} [${g.store}]: ${g.value}`);
  for (const r of rows) {
    if (!r.probe) continue;
    console.log(`\nprobe (${r.store}), ${r.probe.seconds} s profiled, ${r.probe.profile}`);
    console.log(`  by area: ${r.probe.byArea.slice(0, 8).map((x) => `${x.area} ${x.pct}%`).join(', ')}`);
    console.log(`  by self time: ${r.probe.bySelf.slice(0, 12).map((x) => `${x.fn} ${x.pct}%`).join('; ')}`);
    console.log(`  statements: ${r.probe.queries.slice(0, 6).map((q) => `${q.calls}× ${q.sql.slice(0, 70)}`).join('; ')}`);
    if (r.heapMb) console.log(`  memoryUsage MB before: ${JSON.stringify(r.heapMb.before)}; peaks: ${JSON.stringify(r.heapMb.peak)}`);
  }

  const file = join(ROOT, 'bench', 'results', `ota-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:ota', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: load1 },
    options: { stores, devices: DEVICES, imageBytes: IMAGE_BYTES, deviceProcesses: PROCESSES, chunkBytes: DEFAULT_CHUNK_BYTES, window: DEFAULT_WINDOW, serverTransfers: SERVER_TRANSFERS, baselineAtOnce: BASELINE_AT_ONCE, probe: PROBE },
    skyport: rows, goals,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
}

runBenchmark('bench:ota', 120 + (stores.length + 1) * (BOUND_MS / 1000 + 180), main);
