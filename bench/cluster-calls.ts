// The API's part of bench/cluster.ts: function calls through an API node to devices held by two
// gateway nodes, beside a single node in the same run; and client_credentials tokens issued by
// two API nodes at once, beside one.
import autocannon from 'autocannon';
import { ARG, compare, startResponder, wireCaller, type Row, type Side } from './call-drive.js';
import { startNode, stopNode, type NatsServer, type Node } from './cluster-nodes.js';
import { api, cpuSeconds, round2, userWithProduct } from './harness.js';

type Identity = { id: string; secret: string };

/** A caller of POST /v1/devices/:id/echo on `url`, every answer checked (bench/call-drive.ts). */
function echoCaller(url: string, ids: string[], token: string) {
  const body = JSON.stringify({ arg: ARG });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  return wireCaller(new URL(url), (id) => `/v1/devices/${id}/echo`, ids, headers, body);
}

/**
 * `devices` (an even number, of the cluster's product) answer on the two gateways, half on each;
 * as many answer on a single node of its own (role all, no NATS, a database of its own). The
 * callers go through the cluster's API node, or the single node's API.
 */
export async function callsPart(o: {
  apiNode: Node; gateways: [Node, Node]; nats: NatsServer; token: string; devices: Identity[]; adminUrl: string;
  callers: number; warmup: number; duration: number; rounds: number;
}): Promise<Row[]> {
  const half = o.devices.length / 2;
  const onGateway = await Promise.all(o.gateways.map((g, k) => startResponder({ mode: 'skyport', mqttUrl: `mqtt://${g.mqttHost}:${g.mqttPort}`, devices: o.devices.slice(k * half, (k + 1) * half) })));
  const single = await startNode('all', 'single', { adminUrl: o.adminUrl });
  const s = await userWithProduct(single.url, 'single-node calls');
  const singleDevices: Identity[] = [];
  for (let i = 0; i < o.devices.length; i++) {
    const d = await api<{ id: string; device_secret: string }>(`${single.url}/v1/devices`, { token: s.token, json: { product_id: s.productId } });
    singleDevices.push({ id: d.id, secret: d.device_secret });
  }
  const onSingle = await startResponder({ mode: 'skyport', mqttUrl: `mqtt://${single.mqttHost}:${single.mqttPort}`, devices: singleDevices });
  const sides: Side[] = [
    { side: 'single', scenario: 'single node (all), POST /v1/devices/:id/echo', store: 'postgres', call: echoCaller(single.url, singleDevices.map((d) => d.id), s.token), pids: { server: single.pid, devices: onSingle.pid } },
    {
      side: 'cluster', scenario: 'API node → NATS → 2 gateway nodes, POST /v1/devices/:id/echo', store: 'postgres', call: echoCaller(o.apiNode.url, o.devices.map((d) => d.id), o.token),
      pids: { server: [o.apiNode.pid, ...o.gateways.map((g) => g.pid), o.nats.pid], devices: onGateway.map((r) => r.pid ?? 0) },
    },
  ];
  // Checked before measuring: every device answers with the right return value, on both sides.
  for (const side of sides) for (let w = 0; w < o.devices.length; w++) await side.call(w);
  const rows = await compare('function calls', sides, { concurrencies: [o.callers], warmup: o.warmup, duration: o.duration, rounds: o.rounds }, 'single');
  await Promise.all([...onGateway, onSingle].map((r) => r.stop()));
  await stopNode(single);
  return rows;
}

export interface TokenRow { nodes: number; tokens: number; seconds: number; rate: number; p50Ms: number; p99Ms: number; failed: number; apiCpuUsPerToken: number | null; ratio?: number }

/**
 * POST /oauth/token (client_credentials, a user's OAuth client) at `connections` connections:
 * all on the first API node, then split over both at once; `rounds` of each, alternating which
 * goes first, after a warm-up of each.
 */
export async function tokensPart(o: { apiNodes: [Node, Node]; token: string; connections: number; warmup: number; duration: number; rounds: number }): Promise<TokenRow[]> {
  const { client } = await api<{ client: { id: string; secret: string } }>(`${o.apiNodes[0].url}/v1/clients`, { token: o.token, json: { name: 'bench tokens' } });
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }).toString();
  // Checked before measuring: both nodes issue a token for the client.
  for (const n of o.apiNodes) await api(`${n.url}/oauth/token`, { form: { grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret } });
  const run = async (nodes: Node[], seconds: number) => {
    const cpu0 = nodes.map((n) => cpuSeconds(n.pid));
    const results = await Promise.all(nodes.map((n) => autocannon({
      url: `${n.url}/oauth/token`, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body,
      connections: Math.round(o.connections / nodes.length), pipelining: 1, timeout: 10, duration: seconds,
    })));
    const cpu = nodes.map((n, i) => (cpuSeconds(n.pid) ?? NaN) - (cpu0[i] ?? NaN));
    const tokens = results.reduce((a, r) => a + r.requests.total, 0);
    return {
      nodes: nodes.length, tokens, seconds, rate: Math.round(tokens / seconds),
      // The worst node's percentiles, to stay on the safe side.
      p50Ms: Math.max(...results.map((r) => r.latency.p50)), p99Ms: Math.max(...results.map((r) => r.latency.p99)),
      failed: results.reduce((a, r) => a + r.non2xx + r.errors, 0),
      apiCpuUsPerToken: cpu.some(Number.isNaN) ? null : Math.round((cpu.reduce((a, c) => a + c, 0) * 1e6) / Math.max(1, tokens)),
    } satisfies TokenRow;
  };
  const sides = [[o.apiNodes[0]], [...o.apiNodes]];
  process.stdout.write(`  tokens: warm-up ${o.warmup} s each, measuring ${o.rounds} × ${o.duration / o.rounds} s each... `);
  for (const nodes of sides) await run(nodes, o.warmup);
  const samples: TokenRow[][] = [[], []];
  for (let r = 0; r < o.rounds; r++) {
    for (let k = 0; k < 2; k++) {
      const i = (k + r) % 2;
      samples[i]?.push(await run(sides[i] as Node[], o.duration / o.rounds));
    }
  }
  const rows = samples.map((list): TokenRow => {
    const tokens = list.reduce((a, x) => a + x.tokens, 0);
    const seconds = list.reduce((a, x) => a + x.seconds, 0);
    const cpu = list.every((x) => x.apiCpuUsPerToken !== null) ? Math.round(list.reduce((a, x) => a + (x.apiCpuUsPerToken as number) * x.tokens, 0) / Math.max(1, tokens)) : null;
    return {
      nodes: list[0]?.nodes ?? 0, tokens, seconds, rate: Math.round(tokens / seconds), p50Ms: Math.max(...list.map((x) => x.p50Ms)), p99Ms: Math.max(...list.map((x) => x.p99Ms)),
      failed: list.reduce((a, x) => a + x.failed, 0), apiCpuUsPerToken: cpu,
    };
  });
  const one = rows[0] as TokenRow;
  for (const r of rows) r.ratio = round2(r.rate / one.rate);
  console.log(rows.map((r) => `${r.nodes} API node(s) ${r.rate}/s p99 ${r.p99Ms} ms`).join('; '));
  return rows;
}
