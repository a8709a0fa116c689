import type { Api } from '../../lib/api.js';
import type { CliContext } from '../../lib/context.js';
import { bodyOf, isObject, needed, refusalListing, seg, type JsonObject } from '../../lib/json-input.js';
import type { DeviceConfigView } from '../../../domain/config/views.js';

/** What `skyport config` commands address, and how a write's answer is reported (docs/cli.md). */

export interface Where { product?: string; device?: string }
export interface Target { api: Api; product: string; device: string | undefined; base: string; path: string }

export function targetOf(ctx: CliContext, opts: Where, what: string): Target {
  const api = ctx.authed();
  const product = needed('--product', opts.product, what);
  const device = opts.device === undefined ? undefined : needed('--device', opts.device, what);
  const base = `/v1/products/${seg(product)}/config`;
  return { api, product, device, base, path: device === undefined ? base : `${base}/${seg(device)}` };
}


export const pretty = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
export const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What a device holds or is about to hold: per module, the pending value, else the confirmed one. */
export function effectiveOf(c: DeviceConfigView): JsonObject {
  const out: JsonObject = {};
  for (const m of Object.keys(c.delivery)) out[m] = c.configuration.pending[m] ?? c.configuration.current[m];
  return out;
}

/** A device's own values (what a device write replaces), as the cloud holds them for the schema in force. */
export async function ownValues(t: Target & { device: string }): Promise<JsonObject> {
  const answer = await t.api.request<{ own?: JsonObject }>('GET', t.path);
  return isObject(answer.own) ? answer.own : {};
}

export async function put(t: Target, values: JsonObject | undefined, dryRun = false): Promise<{ status: number; body: JsonObject }> {
  const res = await t.api.fetch('PUT', t.path, { ...(values === undefined ? {} : { json: values }), query: dryRun ? { dry_run: true } : {} });
  const body = await bodyOf(res);
  return { status: res.status, body: isObject(body) ? body : {} };
}

/**
 * What became of a write: the fleet's is stored and on its way; a device's is applied (200), held
 * for the offline device (202), refused by it (400, with its codes) or unanswered (408, pending).
 */
export function report(ctx: CliContext, t: Target, status: number, body: JsonObject, done: string): void {
  if (t.device === undefined) {
    if (status !== 200) throw refusalListing(status, body);
    ctx.out.result(body, () => `${done}: version ${String(body.version)}; connected devices take it now (\`skyport config status --product ${t.product}\` follows the rollout)`);
    return;
  }
  const device = `device ${t.device}`;
  if (status === 200) return ctx.out.result(body, () => `applied: ${device} took it (version ${String(body.version)}; ${done})`);
  if (status === 202) return ctx.out.result(body, () => `held: ${device} is offline and takes version ${String(body.version)} when it next connects (${done})`);
  if (status === 400 && body.error === 'device_rejected_configuration') {
    if (ctx.out.json) process.stdout.write(pretty(body));
    const results = Array.isArray(body.results) ? (body.results as Array<{ module: string; status: string; code?: number }>) : [];
    const refused = results.filter((r) => r.status === 'rejected').map((r) => `${r.module} (code ${r.code})`).join(', ');
    throw new Error(`refused: ${device} refused ${refused || 'the configuration'}; the values are stored and the device keeps its previous ones [400]`);
  }
  if (status === 408) {
    if (ctx.out.json) process.stdout.write(pretty(body));
    throw new Error(`timed out: ${device} did not acknowledge in time; the values are stored and stay pending until it does [408]`);
  }
  throw refusalListing(status, body);
}

export const previewLine = (body: JsonObject) => {
  const d = (body.devices ?? {}) as { changed?: number; online?: number; modules?: Record<string, number> };
  const modules = Object.entries(d.modules ?? {}).map(([m, n]) => `${m} ${n}`).join(', ');
  return `valid: ${plural(d.changed ?? 0, 'device')} would change (${d.online ?? 0} connected now)${modules ? `; by module: ${modules}` : ''}; nothing was stored`;
};
