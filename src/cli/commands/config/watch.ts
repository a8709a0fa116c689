import { progress, table } from '../../lib/output.js';
import type { DeviceConfigView, RolloutView } from '../../../domain/config/views.js';
import { plural } from './target.js';

/** `skyport config status`: where a rollout or a device stands, once or followed until it settles. */

export const rolloutLine = (r: RolloutView) => `${plural(r.devices, 'device')}: ${r.in_sync} in sync, ${r.pending} pending (${r.pending_online} connected), ${r.rejected} refused`;
export const rolloutText = (r: RolloutView) => {
  const rows = Object.entries(r.modules).map(([module, m]) => ({ module, ...m }));
  return `${rolloutLine(r)}\n${rows.length === 0 ? '' : table(rows, [['MODULE', (m) => m.module], ['IN SYNC', (m) => m.in_sync], ['PENDING', (m) => m.pending], ['REFUSED', (m) => m.rejected]])}`;
};
export const deliveryText = (c: DeviceConfigView) => {
  const rows = Object.entries(c.delivery).map(([module, d]) => ({ module, ...d, source: c.sources[module] }));
  const outside = c.outside_firmware_range.map((o) => `outside the firmware range: ${o.path} (firmware ${o.minimumFirmwareVersion ?? ''}-${o.maximumFirmwareVersion ?? ''})`);
  return table(rows, [['MODULE', (m) => m.module], ['STATE', (m) => m.state], ['SOURCE', (m) => m.source], ['CODE', (m) => m.code], ['SINCE', (m) => m.since]])
    + outside.map((l) => `${l}\n`).join('');
};

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/**
 * Polls `read` until `settled` says so or Ctrl-C, with a progress bar on a terminal (a line on
 * each change otherwise); answers the last reading.
 */
export async function watch<T>(read: () => Promise<T>, measure: (r: T) => { total: number; done: number; settled: boolean; line: string }, intervalMs: number): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  let bar: ReturnType<typeof progress> | undefined;
  let total = -1;
  let shown = 0;
  let last = '';
  try {
    for (;;) {
      const r = await read();
      const m = measure(r);
      if (m.total !== total) { bar?.done(); bar = progress(m.total, 'rollout'); total = m.total; shown = 0; }
      if (m.done > shown) { bar?.tick(m.done - shown); shown = m.done; }
      if (!process.stderr.isTTY && m.line !== last) process.stderr.write(`${m.line}\n`);
      last = m.line;
      if (m.settled || stop.signal.aborted) return r;
      await sleep(intervalMs, stop.signal);
      if (stop.signal.aborted) return r;
    }
  } finally {
    bar?.done();
    process.off('SIGINT', onSignal);
  }
}
