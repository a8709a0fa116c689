// A worker process of bench/connections.ts: opens many MQTT 3.1.1 connections with raw sockets
// (the load side must be light: an mqtt.js client costs far more than a connection costs the
// server), CONNECT built with mqtt-packet, CONNACK parsed, then holds them idle, sending PINGREQ
// so that none outlives its keep-alive. Messages from the parent (IPC):
//   {kind:'job', ...Job}  connect; answers {kind:'done', ok, failed, codes, latency, started, finished}
//   {kind:'check'}        PINGREQ on every open connection; answers {kind:'checked', open, alive, lost}
//   {kind:'stop'}         closes everything and exits
import { connect, type Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';

interface Job { host: string; port: number; identities: Array<{ id: string; secret: string }>; inFlight: number; localAddress?: string; keepalive: number }

const PINGREQ = mqttPacket.generate({ cmd: 'pingreq' });
/** PINGRESP is two bytes, 0xD0 0x00. */
const PINGRESP_TYPE = 0xd0;

interface Held { socket: Socket; pongs: number }
const held: Held[] = [];
let lost = 0;

function open(job: Job, who: { id: string; secret: string }): Promise<{ code: number; ms: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const socket = connect({ host: job.host, port: job.port, ...(job.localAddress ? { localAddress: job.localAddress } : {}) });
    const parser = mqttPacket.parser();
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      resolve({ code, ms: performance.now() - t0 });
    };
    parser.on('packet', (p) => {
      if (p.cmd !== 'connack') return;
      const code = p.returnCode ?? -1;
      finish(code);
      if (code !== 0) return;
      // Connected: from now on only PINGRESPs arrive; count them without a parser.
      const h: Held = { socket, pongs: 0 };
      held.push(h);
      socket.removeAllListeners('data');
      socket.on('data', (d: Buffer) => { for (let i = 0; i < d.length; i += 2) if (d[i] === PINGRESP_TYPE) h.pongs++; });
      socket.once('close', () => { lost++; });
    });
    parser.on('error', () => finish(-4));
    socket.on('data', (d) => parser.parse(d));
    socket.on('error', () => finish(-2));
    socket.on('close', () => finish(-3));
    socket.on('connect', () => {
      socket.write(mqttPacket.generate({
        cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: job.keepalive,
        clientId: who.id, username: who.id, password: Buffer.from(who.secret),
      }));
    });
  });
}

async function run(job: Job): Promise<void> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const codes: Record<string, number> = {};
  const latencies: number[] = [];
  const started = Date.now();
  const progress = setInterval(() => process.send?.({ kind: 'progress', ok, failed }), 1000);
  await Promise.all(Array.from({ length: Math.min(job.inFlight, job.identities.length) }, async () => {
    while (next < job.identities.length) {
      const { code, ms } = await open(job, job.identities[next++] as { id: string; secret: string });
      if (code === 0) {
        ok++;
        latencies.push(ms);
      } else {
        failed++;
        codes[String(code)] = (codes[String(code)] ?? 0) + 1;
      }
    }
  }));
  const finished = Date.now();
  clearInterval(progress);
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil(latencies.length * p) - 1))] ?? NaN;
  process.send?.({ kind: 'done', ok, failed, codes, latency: { p50: q(0.5), p99: q(0.99), max: latencies.at(-1) ?? NaN }, started, finished });

  // Keep-alive: every connection sends a PINGREQ every keepalive/2 seconds, spread over time.
  if (job.keepalive > 0) {
    let cursor = 0;
    const perSecond = Math.ceil(held.length / Math.max(1, job.keepalive / 2));
    setInterval(() => {
      for (let k = 0; k < perSecond && held.length > 0; k++) {
        const h = held[cursor++ % held.length] as Held;
        if (!h.socket.destroyed) h.socket.write(PINGREQ);
      }
    }, 1000).unref();
  }
}

async function check(): Promise<void> {
  const open = held.filter((h) => !h.socket.destroyed);
  const before = open.map((h) => h.pongs);
  for (const h of open) h.socket.write(PINGREQ);
  const deadline = Date.now() + 15_000;
  let alive = 0;
  while (Date.now() < deadline) {
    alive = open.reduce((a, h, i) => a + (h.pongs > (before[i] as number) ? 1 : 0), 0);
    if (alive === open.length) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  process.send?.({ kind: 'checked', open: open.length, alive, lost });
}

process.on('message', (m: { kind: string } & Partial<Job>) => {
  if (m.kind === 'job') run(m as unknown as Job).catch((err) => { console.error(err); process.exit(1); });
  else if (m.kind === 'check') void check();
  else if (m.kind === 'stop') {
    for (const h of held) h.socket.destroy();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
