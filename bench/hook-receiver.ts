// A child process of bench/webhooks.ts: the webhook receivers, plain node:http servers (no
// Skyport code). Each answers 200 with an empty body as soon as a request's body has arrived, and
// keeps, per path (`/hook`, `/bare`, ...): every event id it got and how often, and each
// receipt's time and latency (its time less the send time `t` that the event's data carries).
// One request in SAMPLE_EVERY has its Standard Webhooks signature checked with the
// standardwebhooks package (the first of each path too); a wrong one is counted, and fails the run.
//
// Commands come over IPC, each answered with one message of the same `seq`:
//   listen {name, host}                 a receiver on host:<free port>; answers {port}
//   secret {name, path, secret}          the signing secret of the webhook that posts to path
//   mode {name, mode: ok|503|refuse}     503: answers 503 to everything; refuse: stops listening
//                                        and drops its connections; ok: answers (listens) again
//   stats {name, path, from?, to?, timeline?}  counts and latency percentiles of the receipts in
//                                        [from, to); with timeline, per second the receipts and the worst latency
//   missing {name, path, ranges}         how many ids of [start, end) ranges were never received,
//                                        and how many were received more than once
//   sample {name, path}                  the headers and body of the latest request
// Times are `performance.timeOrigin + performance.now()` (ms), comparable between processes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { serveCommands } from './child-commands.js';

const SAMPLE_EVERY = 50;
const now = () => performance.timeOrigin + performance.now();

interface Stream {
  seen: Map<number, number>;
  /** Receipt time and latency, in receipt order. */
  at: number[];
  latency: number[];
  requests: number;
  verified: number;
  badSignatures: number;
  badBodies: number;
  verifier?: Webhook;
  sample?: { headers: Record<string, string>; body: string };
}

interface Receiver { server: Server; host: string; port: number; mode: 'ok' | '503' | 'refuse'; streams: Map<string, Stream> }

const receivers = new Map<string, Receiver>();

function stream(r: Receiver, path: string): Stream {
  let s = r.streams.get(path);
  if (!s) r.streams.set(path, (s = { seen: new Map(), at: [], latency: [], requests: 0, verified: 0, badSignatures: 0, badBodies: 0 }));
  return s;
}

function handle(r: Receiver, req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const received = now();
    if (r.mode !== 'ok') {
      res.writeHead(503, { 'content-length': '0' }).end();
      return;
    }
    res.writeHead(200, { 'content-length': '0' }).end();
    const s = stream(r, (req.url ?? '/').split('?')[0] as string);
    s.requests += 1;
    const body = Buffer.concat(chunks).toString('utf8');
    let id: number;
    let t: number;
    try {
      const data = JSON.parse(new URLSearchParams(body).get('data') ?? '') as { i: number; t: number };
      id = data.i;
      t = data.t;
      if (!Number.isFinite(id) || !Number.isFinite(t)) throw new Error('no id or time');
    } catch {
      s.badBodies += 1;
      return;
    }
    s.seen.set(id, (s.seen.get(id) ?? 0) + 1);
    s.at.push(received);
    s.latency.push(received - t);
    if (s.requests === 1 || s.requests % SAMPLE_EVERY === 0) {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v ?? '']));
      s.sample = { headers, body };
      if (s.verifier) {
        // Webhook.verify would also parse the body as JSON (Particle's default body is a form):
        // the signature is computed with the package and looked for among the header's.
        const expected = s.verifier.sign(headers['webhook-id'] ?? '', new Date(Number(headers['webhook-timestamp']) * 1000), body);
        if ((headers['webhook-signature'] ?? '').split(' ').includes(expected)) s.verified += 1;
        else s.badSignatures += 1;
      }
    }
  });
}

function listen(r: Receiver, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    r.server.once('error', reject);
    r.server.listen(port, r.host, () => {
      r.server.off('error', reject);
      resolve((r.server.address() as { port: number }).port);
    });
  });
}

/** The p-th quantile (0..1) of ascending values, by the nearest-rank method. */
function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))] as number;
}
const r2 = (n: number | null) => (n === null ? null : Math.round(n * 100) / 100);

function stats(s: Stream, from = -Infinity, to = Infinity, timeline = false) {
  const lat: number[] = [];
  /** Per second from `from`: receipts, and the worst latency (where the tail sits in time). */
  const seconds: Array<[number, number]> = [];
  let first: number | null = null;
  let last: number | null = null;
  for (let k = 0; k < s.at.length; k++) {
    const at = s.at[k] as number;
    if (at < from || at >= to) continue;
    lat.push(s.latency[k] as number);
    if (timeline && Number.isFinite(from)) {
      const slot = Math.floor((at - from) / 1000);
      const cell = (seconds[slot] ??= [0, 0]);
      cell[0] += 1;
      cell[1] = Math.max(cell[1], Math.round(s.latency[k] as number));
    }
    first ??= at;
    last = at;
  }
  lat.sort((a, b) => a - b);
  return {
    count: lat.length, first, last, p50: r2(percentile(lat, 0.5)), p90: r2(percentile(lat, 0.9)), p99: r2(percentile(lat, 0.99)), max: r2(percentile(lat, 1)),
    requests: s.requests, verified: s.verified, badSignatures: s.badSignatures, badBodies: s.badBodies,
    ...(timeline ? { timeline: Array.from(seconds, (c) => c ?? [0, 0]) } : {}),
  };
}

function missing(s: Stream, ranges: Array<[number, number]>) {
  let expected = 0;
  let lost = 0;
  let duplicates = 0;
  let firstMissing: number | null = null;
  for (const [start, end] of ranges) {
    for (let id = start; id < end; id++) {
      expected += 1;
      const n = s.seen.get(id) ?? 0;
      if (n === 0) { lost += 1; firstMissing ??= id; }
      else if (n > 1) duplicates += n - 1;
    }
  }
  return { expected, missing: lost, duplicates, firstMissing };
}

type Command =
  | { cmd: 'listen'; name: string; host: string }
  | { cmd: 'secret'; name: string; path: string; secret: string }
  | { cmd: 'mode'; name: string; mode: Receiver['mode'] }
  | { cmd: 'stats'; name: string; path: string; from?: number; to?: number; timeline?: boolean }
  | { cmd: 'missing'; name: string; path: string; ranges: Array<[number, number]> }
  | { cmd: 'sample'; name: string; path: string };

async function run(c: Command): Promise<unknown> {
  if (c.cmd === 'listen') {
    const r: Receiver = { server: createServer({ keepAliveTimeout: 60_000 }), host: c.host, port: 0, mode: 'ok', streams: new Map() };
    r.server.on('request', (req, res) => handle(r, req, res));
    r.port = await listen(r, 0);
    receivers.set(c.name, r);
    return { port: r.port };
  }
  const r = receivers.get(c.name);
  if (!r) throw new Error(`no receiver ${c.name}`);
  switch (c.cmd) {
    case 'secret':
      stream(r, c.path).verifier = new Webhook(c.secret);
      return {};
    case 'mode': {
      const was = r.mode;
      r.mode = c.mode;
      if (c.mode === 'refuse' && was !== 'refuse') {
        // Stops accepting, and drops the keep-alive connections the sender holds: new connections are refused.
        const closed = new Promise<void>((resolve) => r.server.close(() => resolve()));
        r.server.closeAllConnections();
        await closed;
      } else if (c.mode !== 'refuse' && was === 'refuse') {
        await listen(r, r.port);
      }
      return {};
    }
    case 'stats': return stats(stream(r, c.path), c.from, c.to, c.timeline);
    case 'missing': return missing(stream(r, c.path), c.ranges);
    case 'sample': return stream(r, c.path).sample ?? null;
  }
}

serveCommands<Command>(run);
