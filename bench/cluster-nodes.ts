// The processes of bench/cluster.ts: a nats-server of the benchmark's own (never the machine's on
// 4222), Skyport nodes as an operator starts them (`skyport server start` from the work tree's
// build, NATS_URL, ROLE, NODE_ID, one PostgreSQL database), and what is read of them.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, accepting, admin, captureOutput, exitedEarly, freePort, onCleanup, sleep, startSkyport, stopChild, timeout, track, type Skyport } from './harness.js';

export interface NatsServer { url: string; pid: number }

/** nats-server with JetStream (the shared tables need it) on a free port, its store in a temporary folder. */
export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bench-nats-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const child = track(spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: ['ignore', 'pipe', 'pipe'] }));
  onCleanup(() => stopChild(child, 5000));
  const output = captureOutput(child);
  await Promise.race([accepting(port), exitedEarly(child, 'nats-server', output), timeout(10_000, 'nats-server start')]);
  return { url: `nats://127.0.0.1:${port}`, pid: child.pid ?? 0 };
}

export type Role = 'all' | 'api' | 'gateway';
export interface Node extends Skyport { role: Role; nodeId: string }

/**
 * One node of the cluster, with its own HTTP and MQTT ports (an api node opens no MQTT port and a
 * gateway serves only /healthz and /metrics on its HTTP port, but each is given both), and
 * METRICS=open so that its connected devices can be read. Without `nats`, a single node (role
 * all, the in-process bus) on its own database.
 */
export async function startNode(role: Role, nodeId: string, o: { nats?: NatsServer; databaseUrl?: string; adminUrl: string; inspect?: boolean }): Promise<Node> {
  const env: Record<string, string> = { METRICS: 'open', ...(o.nats ? { NATS_URL: o.nats.url, ROLE: role, NODE_ID: nodeId } : {}) };
  // The inspector's port is picked like the others (port 0 could take the one picked for HTTP).
  const nodeArgs = o.inspect ? [`--inspect=127.0.0.1:${await freePort()}`] : [];
  const node = await startSkyport('postgres', { adminUrl: o.adminUrl, build: ROOT, env, nodeArgs, name: `node ${nodeId} (${role})`, ...(o.databaseUrl ? { databaseUrl: o.databaseUrl } : {}) });
  return { ...node, role, nodeId };
}

export const stopNode = (n: Node) => stopChild(n.child, 30_000);

/** skyport_devices_connected of a node's GET /metrics (docs/operations.md, "Metrics"). */
export async function connectedOn(n: Node): Promise<number> {
  const text = await (await fetch(`${n.url}/metrics`)).text();
  const m = /^skyport_devices_connected(?:\{[^}]*\})? (\d+)/m.exec(text);
  if (!m) throw new Error(`${n.name}: GET /metrics has no skyport_devices_connected`);
  return Number(m[1]);
}

/** Devices of the product that storage shows online (presence is written in batches, after the CONNACK). */
export async function onlineCount(databaseUrl: string, productId: number): Promise<number> {
  const r = await admin(databaseUrl, (c) => c.query<{ n: string }>('SELECT count(*) AS n FROM devices WHERE product_id = $1 AND online', [productId]));
  return Number(r.rows[0]?.n ?? 0);
}

/** Waits until storage shows `want` devices of the product online. */
export async function waitOnline(databaseUrl: string, productId: number, want: number, ms = 120_000): Promise<number> {
  const t0 = Date.now();
  let n = -1;
  while (Date.now() - t0 < ms) {
    n = await onlineCount(databaseUrl, productId);
    if (n === want) return Date.now() - t0;
    await sleep(250);
  }
  throw new Error(`storage shows ${n} devices online after ${ms / 1000} s, expected ${want}`);
}

/**
 * Records every device of the product as holding what `model` holds (its rows of
 * device_config_state, copied column for column), in one statement: a fleet already in sync,
 * without 9 messages per device through the gateways first. Answers module → hash.
 */
export async function copyConfigState(databaseUrl: string, productId: number, model: string): Promise<Record<string, string>> {
  return admin(databaseUrl, async (c) => {
    const columns = (await c.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'device_config_state' ORDER BY ordinal_position")).rows.map((r) => r.column_name);
    const rest = columns.filter((col) => col !== 'device_id');
    await c.query(`INSERT INTO device_config_state (device_id, ${rest.join(', ')})
      SELECT d.id, ${rest.map((col) => `s.${col}`).join(', ')} FROM devices d CROSS JOIN device_config_state s
      WHERE d.product_id = $1 AND d.id <> $2 AND s.device_id = $2`, [productId, model]);
    await c.query('ANALYZE device_config_state');
    const held = await c.query<{ module: string; hash: string }>("SELECT module, hash FROM device_config_state WHERE device_id = $1 AND status = 'in_sync'", [model]);
    return Object.fromEntries(held.rows.map((r) => [r.module, r.hash]));
  });
}
