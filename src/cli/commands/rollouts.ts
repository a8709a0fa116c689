import type { Command } from 'commander';
import type { Api } from '../lib/api.js';
import { contextOf } from '../lib/context.js';
import { table } from '../lib/output.js';
import { fields, productApi, productRef, type ProductApi } from '../lib/resources.js';
import type { RolloutView } from '../../services/firmware/rollouts/view.js';

/**
 * `skyport rollouts start|status|pause|resume|abort|next`: staged rollouts of product firmware
 * (docs/firmware.md, "Staged rollouts"; docs/cli.md), through the REST API.
 */

const STATES = ['not_started', 'pending', 'downloading', 'applying', 'succeeded', 'failed', 'excluded'] as const;

const waveName = (w: RolloutView['waves'][number]) =>
  w.percent !== undefined ? `${w.percent}%` : w.count !== undefined ? `${w.count} devices` : w.group !== undefined ? `group ${w.group}` : 'the rest';

const counted = (p: Record<string, number>) => STATES.filter((s) => p[s]! > 0).map((s) => `${p[s]} ${s.replace('_', ' ')}`).join(', ') || 'no devices';

function errorThreshold(r: RolloutView): string {
  const t = r.error_threshold;
  if (!t) return 'none';
  const parts = [t.count !== null ? `${t.count} failure${t.count === 1 ? '' : 's'}` : null, t.percent !== null ? `${t.percent} % of finished updates` : null].filter(Boolean);
  return `${parts.join(' or ')}, once ${t.min_finished} finished`;
}

/** One rollout for people: what it is, where it stands, and its waves. */
function describe(r: RolloutView): string {
  return fields([
    ['id', r.id],
    ['version', r.version],
    ['target', r.fleet ? 'the fleet' : `groups ${r.groups.join(', ')}`],
    ['state', r.reason && r.state !== 'running' ? `${r.state}: ${r.reason.message}` : r.state],
    ['wave', `${r.current_wave} of ${r.waves.length}${r.awaiting_advance ? ' (succeeded: waiting for `skyport rollouts next`)' : ''}`],
    ['advance', `${r.advance}, at ${r.success_threshold} % succeeded`],
    ['rate', r.rate_per_minute === null ? 'no limit' : `${r.rate_per_minute} devices a minute`],
    ['error threshold', errorThreshold(r)],
    ['progress', counted(r.progress)],
    ['left out', `${r.excluded.development} development, ${r.excluded.locked} locked, ${r.excluded.other_release} on a group release`],
    ['created at', r.created_at],
    ['finished at', r.finished_at],
  ]) + '\n' + table(r.waves, [
    ['WAVE', (w) => w.wave],
    ['OF', waveName],
    ['DEVICES', (w) => w.devices],
    ['STATE', (w) => w.state],
    ['SUCCEEDED', (w) => `${w.succeeded_share}%`],
    ...STATES.map((s) => [s.replace('_', ' ').toUpperCase(), (w: RolloutView['waves'][number]) => w.progress[s]] as [string, (w: RolloutView['waves'][number]) => unknown]),
  ]);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

async function product(api: Api, given: string | undefined): Promise<ProductApi> {
  return productApi(api, await productRef(api, given));
}

interface StartOptions {
  product?: string; groups?: string; wave?: string[]; rate?: string; success?: string; manual?: boolean;
  errorCount?: string; errorPercent?: string; minFinished?: string;
}

/** The request of `rollouts start`: flags as the API's fields; the cloud checks them all. */
function startBody(version: string, o: StartOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { version };
  if (o.groups !== undefined) body.groups = o.groups;
  if (o.wave && o.wave.length > 0) body.waves = o.wave;
  if (o.rate !== undefined) body.rate_per_minute = o.rate;
  if (o.success !== undefined) body.success_threshold = o.success;
  if (o.manual) body.advance = 'manual';
  if (o.errorCount !== undefined || o.errorPercent !== undefined || o.minFinished !== undefined) {
    body.error_threshold = { count: o.errorCount, percent: o.errorPercent, min_finished: o.minFinished };
  }
  return body;
}

export function registerRolloutCommands(program: Command): void {
  const rollouts = program.command('rollouts').alias('rollout')
    .description('staged rollouts of product firmware: waves, a rate, thresholds; pause, resume, abort (docs/firmware.md, "Staged rollouts")');
  const productOption = '--product <id-or-slug>';
  const productHelp = 'the product (default: the one your token manages)';

  rollouts.command('start')
    .description('start a rollout of <version> to the fleet, or to --groups; it advances by itself (or with `next` when --manual)')
    .argument('<version>', 'the firmware version (uploaded already)')
    .option(productOption, productHelp)
    .option('--groups <a,b>', 'only these groups\' devices (default: the fleet)')
    .option('--wave <size>', 'a wave, in order: 10% of the devices, 25 devices, or group:beta (repeat; what they leave is a last wave)', collect)
    .option('--rate <n>', 'devices started per minute, at most (default: no limit)')
    .option('--success <percent>', 'the share of a wave that must succeed before the next starts (default 100)')
    .option('--manual', 'wait for `skyport rollouts next` between waves')
    .option('--error-count <n>', 'pause once this many updates failed')
    .option('--error-percent <percent>', 'pause once this share of the finished updates failed')
    .option('--min-finished <n>', 'the error threshold applies once this many updates finished (default 1)')
    .action(async (version: string, opts: StartOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await (await product(ctx.authed(), opts.product)).request<RolloutView>('POST', '/firmware/rollouts', { json: startBody(version, opts) });
      ctx.out.result(answer, () => describe(answer));
      ctx.out.note(`Rollout ${answer.id} started: \`skyport rollouts status ${answer.id}\` shows its progress.`);
    });

  rollouts.command('status')
    .description('the product\'s rollouts, or one with its progress per wave and per state')
    .argument('[id]', 'a rollout (default: all, newest first)')
    .option(productOption, productHelp)
    .action(async (id: string | undefined, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = await product(ctx.authed(), opts.product);
      if (id !== undefined) {
        const one = await api.request<RolloutView>('GET', `/firmware/rollouts/${encodeURIComponent(id)}`);
        return ctx.out.result(one, () => describe(one));
      }
      const all = await api.request<{ rollouts: RolloutView[] }>('GET', '/firmware/rollouts');
      ctx.out.result(all, () => (all.rollouts.length === 0 ? `no rollouts (product ${api.ref})` : table(all.rollouts, [
        ['ID', (r) => r.id],
        ['VERSION', (r) => r.version],
        ['TARGET', (r) => (r.fleet ? 'fleet' : r.groups.join(','))],
        ['STATE', (r) => r.state],
        ['WAVE', (r) => `${r.current_wave}/${r.waves.length}`],
        ['SUCCEEDED', (r) => r.progress.succeeded],
        ['FAILED', (r) => r.progress.failed],
        ['PENDING', (r) => r.progress.pending + r.progress.downloading + r.progress.applying],
        ['NOT STARTED', (r) => r.progress.not_started],
        ['CREATED', (r) => r.created_at],
      ])));
    });

  const step = (name: 'pause' | 'resume' | 'abort' | 'next', description: string, withReason: boolean) => {
    const c = rollouts.command(name).description(description).argument('<id>', 'the rollout').option(productOption, productHelp);
    if (withReason) c.option('--reason <text>', 'why, for the record and the event');
    c.action(async (id: string, opts: { product?: string; reason?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = await product(ctx.authed(), opts.product);
      const answer = await api.request<RolloutView>('POST', `/firmware/rollouts/${encodeURIComponent(id)}/${name}`, { json: opts.reason === undefined ? {} : { reason: opts.reason } });
      ctx.out.result(answer, () => describe(answer));
    });
  };
  step('pause', 'pause a running rollout: no more devices start (updates under way go on)', true);
  step('resume', 'resume a paused rollout; its error threshold counts from now', false);
  step('abort', 'end a rollout: devices not yet updated stay as they are; going back is a release of the earlier version', true);
  step('next', 'start the next wave now (after the last: complete the rollout, releasing the version)', false);
}
