// The devices' part of bench/cluster.ts: a fleet of light devices (bench/config-devices.ts, raw
// sockets) connects, its servers' memory is read before and after, and configuration rounds
// (a fleet change, a reconnect storm) are timed at the devices. The same steps serve Skyport's
// gateways and the Mosquitto baseline.
import type { Expect } from './config-devices.js';
import { problemsOf, roundDone, startFleet, type Fleet } from './config-fleet.js';
import { cpuSeconds, percentile, round2, rssKb, sleep } from './harness.js';

export type Setup = Parameters<typeof startFleet>[0];
export type Identity = Parameters<typeof startFleet>[1][number];
/** A process whose memory and CPU are read; `devices`: how many of the fleet's connections it holds. */
export interface Proc {
  name: string; pid: number; devices?: number;
  /** The process's JS heap in use right after a full garbage collection, in MB (--heap: through its inspector). */
  heapMb?: () => Promise<number>;
}

export interface ConnectRow {
  server: string;
  devices: number;
  /** Devices that got CONNACK 0 (and then SUBACK, and sent their hello). */
  ok: number;
  failed: number;
  codes: Record<string, number>;
  /** From the first CONNECT to the last device's hello. */
  seconds: number;
  rate: number;
  /** Resident memory of each process, before the devices connected and after; per device it holds, or of the fleet. */
  memory: Array<{ name: string; beforeMb: number; afterMb: number; kbPerDevice: number }>;
  /** The processes that hold the connections: their growth together ÷ devices. */
  kbPerDevice: number;
  /** Every process read (a cluster's NATS server and API node too): their growth together ÷ devices. */
  allKbPerDevice: number;
  /** The holders' JS heap after a full garbage collection (--heap): growth together ÷ devices; what stays, garbage aside. */
  heapKbPerDevice?: number;
  /** CPU seconds of all the processes read, over the connect. */
  serverCpuS: number | null;
  lost: number;
}

const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
function cpuOf(procs: Proc[]): number | null {
  const each = procs.map((p) => cpuSeconds(p.pid));
  return each.some((c) => c === null) ? null : sum(each as number[]);
}

/**
 * Warm-up first: a few devices connect and leave, so that one-time costs (compiled code,
 * mqtt-packet's tables) are not counted per device. Then every device connects (each: CONNECT,
 * SUBSCRIBE, its configuration hello), and after `settleS` the memory is read again. `holders`
 * hold the connections (their growth is the memory per device); `others` are read alongside.
 */
export async function connectFleet(o: {
  server: string; setup: Setup; devices: Identity[]; perWorker: number; warm: number; settleS: number; holders: Proc[]; others: Proc[];
}): Promise<{ fleet: Fleet; row: ConnectRow }> {
  const warmSet = spread(o.devices, o.warm);
  const warm = await startFleet(o.setup, warmSet, o.perWorker);
  const w = await warm.connect(true);
  if (w.ok !== warmSet.length) throw new Error(`${o.server}: warm-up: ${w.ok} of ${warmSet.length} devices connected (${JSON.stringify(w.codes)})`);
  await warm.disconnect();
  await warm.stop();
  const fleet = await startFleet(o.setup, o.devices, o.perWorker);
  await sleep(2000);
  const procs = [...o.holders, ...o.others];
  const heaps = async () => Promise.all(o.holders.map((p) => p.heapMb?.()));
  const heapBefore = await heaps();
  const before = procs.map((p) => rssKb(p.pid));
  const cpu0 = cpuOf(procs);
  const t0 = Date.now();
  const c = await fleet.connect(true);
  const seconds = (c.lastReadyAt - t0) / 1000;
  const cpu1 = cpuOf(procs);
  await sleep(o.settleS * 1000);
  const after = procs.map((p) => rssKb(p.pid));
  const memory = procs.map((p, i) => ({
    name: p.name, beforeMb: Math.round((before[i] as number) / 1024), afterMb: Math.round((after[i] as number) / 1024),
    kbPerDevice: round2(((after[i] as number) - (before[i] as number)) / Math.max(1, p.devices ?? c.ok)),
  }));
  const held = o.holders.map((_, i) => (after[i] as number) - (before[i] as number));
  const heapAfter = await heaps();
  const heapGrowthMb = o.holders.every((p) => p.heapMb) ? sum(heapAfter.map((h, i) => (h ?? 0) - (heapBefore[i] ?? 0))) : null;
  const report = await fleet.report();
  return {
    fleet,
    row: {
      server: o.server, devices: o.devices.length, ok: c.ok, failed: c.failed, codes: c.codes, seconds: round2(seconds), rate: Math.round(c.ok / seconds),
      memory, kbPerDevice: round2(sum(held) / Math.max(1, c.ok)), allKbPerDevice: round2((sum(after) - sum(before)) / Math.max(1, c.ok)),
      ...(heapGrowthMb === null ? {} : { heapKbPerDevice: round2((heapGrowthMb * 1024) / Math.max(1, c.ok)) }), serverCpuS: cpu0 === null || cpu1 === null ? null : round2(cpu1 - cpu0), lost: report.lost,
    },
  };
}

/** `n` devices taken evenly from the list (so from every gateway when it is ordered by gateway). */
function spread<T>(list: T[], n: number): T[] {
  const k = Math.min(n, list.length);
  return Array.from({ length: k }, (_, i) => list[Math.floor((i * list.length) / k)] as T);
}

export interface RoundRow {
  side: string;
  scenario: 'fleet change' | 'reconnect storm';
  round: number;
  devices: number;
  /** From the trigger (the write sent, the reconnects started) to the last device's acknowledgement (the time limit when not every device got there). */
  ms: number;
  /** Devices in sync per second over the round. */
  rate: number;
  p50Ms: number;
  p99Ms: number;
  firstSetMs: number;
  /** Storm: until every device had connected, subscribed and sent its hello. */
  connectedMs?: number;
  /** Skyport's fleet change: until the write (PUT) answered. */
  putMs?: number;
  serverCpuS: number | null;
  sets: number;
  problems: string[];
}

/** One round: every device must end holding `e`; `trigger` starts it and may say what it measured on the way. */
export async function timedRound(o: {
  side: string; scenario: RoundRow['scenario']; round: number; fleet: Fleet; expect: Expect; servers: Proc[]; timeoutMs: number;
  trigger(t0: number): Promise<Partial<Pick<RoundRow, 'connectedMs' | 'putMs'>>>;
}): Promise<RoundRow> {
  const { done } = await o.fleet.expect(o.expect);
  const cpu0 = cpuOf(o.servers);
  const t0 = Date.now();
  const measured = await o.trigger(t0);
  // A round that does not finish in time is recorded with what got through, not thrown away.
  let timedOut = false;
  const r = await roundDone(o.fleet, done, `${o.side} ${o.scenario}`, t0, o.timeoutMs).catch(async (err: unknown) => {
    console.error(`  ${(err as Error).message}`);
    timedOut = true;
    return o.fleet.report();
  });
  const cpu1 = cpuOf(o.servers);
  const latencies = r.ackTimes.map((t) => t - t0).sort((a, b) => a - b);
  const ms = timedOut ? o.timeoutMs : r.lastAckAt - t0;
  const row: RoundRow = {
    side: o.side, scenario: o.scenario, round: o.round, devices: r.devices, ms, rate: Math.round((r.done * 1000) / Math.max(1, ms)),
    p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), firstSetMs: r.firstSetAt - t0, ...measured,
    serverCpuS: cpu0 === null || cpu1 === null ? null : round2(cpu1 - cpu0), sets: r.sets, problems: problemsOf(r),
  };
  console.log(`  ${row.side} ${row.scenario} #${row.round}: ${row.devices} devices in ${row.ms} ms (${row.rate}/s; p50 ${row.p50Ms}, p99 ${row.p99Ms}, first set ${row.firstSetMs} ms${row.putMs !== undefined ? `, PUT answered ${row.putMs} ms` : ''}${row.connectedMs !== undefined ? `, all connected ${row.connectedMs} ms` : ''}; server CPU ${row.serverCpuS ?? '-'} s)${row.problems.length ? `  PROBLEMS: ${row.problems.join('; ')}` : ''}`);
  return row;
}
