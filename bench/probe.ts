// Where a phase of bench/config-fanout.ts spends the server's time (--probe): a CPU profile of the
// server over the phase, taken through its inspector, summarised by function and by part of the
// code, and the storage statements of the phase (bench/count-queries.mjs, preloaded).
import { writeFileSync } from 'node:fs';
import { inspectorSession, round2 } from './harness.js';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }
export interface PhaseProbe {
  profile: string;
  seconds: number;
  /** Busy time by part of the code (self time), ms. */
  byArea: Array<{ area: string; ms: number; pct: number }>;
  /** Functions by self time. */
  bySelf: Array<{ fn: string; ms: number; pct: number }>;
  /** Skyport's own functions by the time on stack under them (synchronous parts only: async functions resume on other stacks). */
  byTotal: Array<{ fn: string; ms: number; pct: number }>;
  queries: Array<{ sql: string; calls: number; rows: number; ms?: number }>;
}

/** The part of the code a frame belongs to, for the summary. */
function areaOf(f: Node['callFrame']): string {
  const u = f.url;
  if (!u) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (u.startsWith('wasm://')) return 'PGlite WebAssembly (embedded store)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (pkg) return `npm ${pkg[1]}`;
  const own = /\/(?:dist|src)\/(.+?)\.[jt]s$/.exec(u);
  if (own) return `skyport ${own[1]}`;
  if (u.startsWith('node:')) return 'Node.js internals';
  return u;
}

const fnOf = (f: Node['callFrame']) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;

function summarise(p: Profile): Omit<PhaseProbe, 'profile' | 'queries'> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000));
  const total = [...self.values()].reduce((a, v) => a + v, 0);
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const areas = new Map<string, number>();
  const selves = new Map<string, number>();
  const totals = new Map<string, number>();
  // Time under each function: every sample counts once per distinct Skyport function on its stack.
  const walk = (id: number, onStack: Map<string, number>) => {
    const n = byId.get(id) as Node;
    const ms = self.get(id) ?? 0;
    add(areas, areaOf(n.callFrame), ms);
    add(selves, fnOf(n.callFrame), ms);
    const key = fnOf(n.callFrame);
    const own = areaOf(n.callFrame).startsWith('skyport ');
    if (own) onStack.set(key, (onStack.get(key) ?? 0) + 1);
    for (const k of onStack.keys()) add(totals, k, ms);
    for (const c of n.children ?? []) walk(c, onStack);
    if (own) {
      const left = (onStack.get(key) ?? 1) - 1;
      if (left === 0) onStack.delete(key);
      else onStack.set(key, left);
    }
  };
  walk(p.nodes[0]?.id ?? 1, new Map());
  const top = (m: Map<string, number>, n: number, key: 'area' | 'fn') => [...m].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([k, ms]) => ({ [key]: k, ms: Math.round(ms), pct: round2((100 * ms) / Math.max(1, total)) }));
  return {
    seconds: round2((p.endTime - p.startTime) / 1e6),
    byArea: top(areas, 15, 'area') as PhaseProbe['byArea'],
    bySelf: top(selves, 20, 'fn') as PhaseProbe['bySelf'],
    byTotal: top(totals, 20, 'fn') as PhaseProbe['byTotal'],
  };
}

export interface Probe { start(): Promise<void>; stop(file: string): Promise<PhaseProbe>; close(): void }

/** Connects to the server's inspector (the server runs with --inspect and count-queries.mjs). */
export async function attachProbe(url: string): Promise<Probe> {
  const { ws, send } = await inspectorSession(url);
  const takeQueries = async () => {
    const r = await send<{ result: { value?: string } }>('Runtime.evaluate', { expression: 'globalThis.__benchQueries?.take() ?? "[]"', returnByValue: true });
    return JSON.parse(r.result.value ?? '[]') as PhaseProbe['queries'];
  };
  await send('Profiler.enable');
  return {
    async start() {
      await takeQueries();
      await send('Profiler.start');
    },
    async stop(file) {
      const { profile } = await send<{ profile: Profile }>('Profiler.stop');
      const queries = await takeQueries();
      writeFileSync(file, JSON.stringify(profile));
      return { profile: file, ...summarise(profile), queries: queries.slice(0, 25) };
    },
    close: () => ws.close(),
  };
}
