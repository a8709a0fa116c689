import type { Command } from 'commander';
import type { Api, RequestOptions } from '../lib/api.js';
import { contextOf } from '../lib/context.js';
import { readJsonObject, seg, wholeNumberOf, type JsonObject } from '../lib/json-input.js';
import { table } from '../lib/output.js';
import { fields, productApi } from '../lib/resources.js';

/** A webhook as the API shows it (docs/api.md, "Webhooks"). */
interface Hook {
  id: string; event: string; url: string; requestType: string; name: string | null; deviceID?: string;
  disabled: boolean; disabled_reason: string | null; failing_since: string | null; created_at: string; updated_at: string;
  counts?: { delivered: number; failed: number; skipped: number; pending: number };
  hookUrl?: string; secret?: string;
  [field: string]: unknown;
}
interface Attempt { n: number; at: string; outcome: string; status: number | null; latency_ms: number; answer: string | null; error: string | null }
interface Delivery { id: string; status: string; event: { name: string; data: string | null; coreid: string }; created_at: string; next_at: string | null; resend_of: string | null; attempts: Attempt[] }

/** A request to the webhooks of the product given with --product, else of the user of the token. */
function call<T>(api: Api, product: string | undefined, method: string, rest: string, options?: RequestOptions): Promise<T> {
  return product === undefined ? api.request<T>(method, `/v1/webhooks${rest}`, options) : productApi(api, product).request<T>(method, `/webhooks${rest}`, options);
}
const owner = (product: string | undefined) => (product === undefined ? 'your account' : `product ${product}`);
const state = (h: Hook) => (h.disabled_reason ? `disabled: ${h.disabled_reason}` : h.disabled ? 'disabled' : h.failing_since ? `failing since ${h.failing_since}` : 'enabled');

/** Particle's fields that are shown as they are (templates, headers…), when the webhook has them. */
const MORE = ['json', 'form', 'body', 'query', 'headers', 'auth', 'noDefaults', 'rejectUnauthorized', 'responseTemplate', 'responseTopic', 'errorResponseTopic'];

const describe = (h: Hook) => fields([
  ['id', h.id],
  ['event', h.event],
  ['url', h.url],
  ['request type', h.requestType],
  ['name', h.name],
  ['device', h.deviceID ?? 'any'],
  ['state', state(h)],
  ...MORE.filter((k) => h[k] !== undefined).map((k) => [k, h[k]] as [string, unknown]),
  ['created at', h.created_at],
  ['updated at', h.updated_at],
  ...(h.counts ? [['last 30 days', `${h.counts.delivered} delivered, ${h.counts.failed} failed, ${h.counts.skipped} skipped, ${h.counts.pending} waiting`]] as Array<[string, unknown]> : []),
  ...(h.hookUrl ? [['api url', h.hookUrl]] as Array<[string, unknown]> : []),
  ...(h.secret ? [['signing secret', h.secret]] as Array<[string, unknown]> : []),
]);

interface SpecOptions { file?: string; event?: string; url?: string; requestType?: string; name?: string; device?: string; header?: string[]; disable?: boolean; enable?: boolean; product?: string }

/**
 * The fields of a create or an update: a file in Particle's webhook JSON (the format of
 * `particle webhook create hook.json`), then the flags over it.
 */
async function specOf(opts: SpecOptions, event?: string, url?: string): Promise<JsonObject> {
  const body: JsonObject = opts.file === undefined ? {} : await readJsonObject(opts.file);
  const set = (k: string, v: unknown) => { if (v !== undefined) body[k] = v; };
  set('event', event ?? opts.event);
  set('url', url ?? opts.url);
  set('requestType', opts.requestType?.toUpperCase());
  set('name', opts.name);
  set('deviceID', opts.device);
  if (opts.header && opts.header.length > 0) {
    const headers: Record<string, string> = { ...(body.headers as Record<string, string> | undefined) };
    for (const h of opts.header) {
      const at = h.indexOf(':');
      if (at <= 0) throw new Error(`--header must be "Name: value", not "${h}"`);
      headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
    }
    body.headers = headers;
  }
  if (opts.disable && opts.enable) throw new Error('--enable or --disable, not both');
  if (opts.disable) body.disabled = true;
  if (opts.enable) body.disabled = false;
  return body;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerWebhookCommands(program: Command): void {
  const webhook = program.command('webhook').alias('webhooks')
    .description('webhooks of your account, or of a product with --product (docs/api.md, "Webhooks"; delivery and signing: docs/webhooks.md)');
  const productOption = '--product <id-or-slug>';
  const productHelp = 'a product\'s webhook (default: your account\'s)';
  const withSpec = (c: Command) => c
    .option('--file <hook.json>', 'the webhook in Particle\'s JSON (templates, headers, auth…); flags win over it')
    .option('--request-type <method>', 'GET, POST (default), PUT or DELETE')
    .option('--name <name>', 'a name for people')
    .option('--device <id-or-name>', 'only this device\'s events (your account\'s webhooks)')
    .option('--header <name: value>', 'a header to send (repeat for more)', collect)
    .option(productOption, productHelp);

  webhook.command('list')
    .description('the webhooks: event prefix, URL, state; never a password or a secret')
    .option(productOption, productHelp)
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const hooks = await call<Hook[]>(ctx.authed(), opts.product, 'GET', '');
      ctx.out.result(hooks, () => (hooks.length === 0 ? `no webhooks (${owner(opts.product)})` : table(hooks, [
        ['ID', (h) => h.id],
        ['EVENT', (h) => h.event],
        ['URL', (h) => h.url],
        ['TYPE', (h) => h.requestType],
        ['DEVICE', (h) => h.deviceID ?? 'any'],
        ['STATE', state],
        ['NAME', (h) => h.name],
      ])));
    });

  withSpec(webhook.command('create')
    .description('a new webhook: events whose name starts with <event> go to <url>; its signing secret is printed this once')
    .argument('[event]', 'the event name prefix (or "event" in --file)')
    .argument('[url]', 'where to send (or "url" in --file)')
    .option('--disable', 'create it disabled'))
    .action(async (event: string | undefined, url: string | undefined, opts: SpecOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const body = await specOf(opts, event, url);
      if (body.event === undefined || body.url === undefined) throw new Error('webhook create needs an event and a URL: `skyport webhook create <event> <url>`, or both in --file');
      const answer = await call<Hook>(ctx.authed(), opts.product, 'POST', '', { json: body });
      ctx.out.result(answer, () => describe(answer));
      ctx.out.note('Store the signing secret now: it is shown this once (skyport webhook rotate-secret makes a new one). Receivers verify the webhook-signature header with it (docs/webhooks.md).');
    });

  withSpec(webhook.command('update')
    .description('change a webhook: the fields given replace theirs, the others stay')
    .argument('<id>', 'the webhook')
    .option('--event <prefix>', 'a new event name prefix')
    .option('--url <url>', 'a new address')
    .option('--disable', 'stop sending (deliveries wait)')
    .option('--enable', 'send again, also after the cloud disabled it'))
    .action(async (id: string, opts: SpecOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const body = await specOf(opts);
      if (Object.keys(body).length === 0) throw new Error('webhook update needs something to change: --event, --url, --request-type, --name, --device, --header, --file, --enable or --disable');
      const answer = await call<Hook>(ctx.authed(), opts.product, 'PUT', `/${seg(id)}`, { json: body });
      ctx.out.result(answer, () => describe(answer));
    });

  webhook.command('get')
    .description('one webhook, with its deliveries of the last 30 days counted')
    .argument('<id>', 'the webhook')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call<Hook>(ctx.authed(), opts.product, 'GET', `/${seg(id)}`);
      ctx.out.result(answer, () => describe(answer));
    });

  webhook.command('delete')
    .description('delete a webhook and its delivery log')
    .argument('<id>', 'the webhook')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call(ctx.authed(), opts.product, 'DELETE', `/${seg(id)}`);
      ctx.out.result(answer, () => `deleted webhook ${id} of ${owner(opts.product)}`);
    });

  webhook.command('log')
    .description('the delivery log, newest first: each delivery and its attempts')
    .argument('<id>', 'the webhook')
    .option('--limit <n>', 'deliveries per page (1-100, default 20)')
    .option('--before <delivery-or-time>', 'the page after this delivery (as the last page said), or before an ISO 8601 time')
    .option('--status <status>', 'only pending, sending, delivered or failed deliveries')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { limit?: string; before?: string; status?: string; product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const query = { limit: opts.limit === undefined ? undefined : wholeNumberOf('--limit', opts.limit, 1, 100), before: opts.before, status: opts.status };
      const answer = await call<{ deliveries: Delivery[]; next_before: string | null }>(ctx.authed(), opts.product, 'GET', `/${seg(id)}/deliveries`, { query });
      ctx.out.result(answer, () => (answer.deliveries.length === 0 ? `no deliveries (webhook ${id})` : answer.deliveries.map(deliveryLines).join('')));
      if (answer.next_before !== null) ctx.out.note(`more: skyport webhook log ${id} --before ${answer.next_before}${opts.product === undefined ? '' : ` --product ${opts.product}`}`);
    });

  webhook.command('test')
    .description('send a made-up event named as the webhook\'s prefix now (see it with `log`)')
    .argument('<id>', 'the webhook')
    .option('--data <text>', 'the event\'s data')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { data?: string; product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call<{ ok: true; delivery_id: string }>(ctx.authed(), opts.product, 'POST', `/${seg(id)}/test`, { json: opts.data === undefined ? {} : { data: opts.data } });
      ctx.out.result(answer, () => `sent a test event: delivery ${answer.delivery_id} (skyport webhook log ${id})`);
    });

  webhook.command('resend')
    .description('send a delivery again, as a new delivery')
    .argument('<id>', 'the webhook')
    .argument('<delivery-id>', 'the delivery (msg_…, from `log`)')
    .option(productOption, productHelp)
    .action(async (id: string, delivery: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call<{ ok: true; delivery_id: string }>(ctx.authed(), opts.product, 'POST', `/${seg(id)}/deliveries/${seg(delivery)}/resend`, { json: {} });
      ctx.out.result(answer, () => `resending ${delivery} as delivery ${answer.delivery_id}`);
    });

  webhook.command('replay')
    .description('send again every delivery made in a time range of the last 30 days (after the receiver was down)')
    .argument('<id>', 'the webhook')
    .option('--from <time>', 'ISO 8601, such as 2026-11-23T05:00:00Z (required)')
    .option('--to <time>', 'ISO 8601, excluded (default: now)')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { from?: string; to?: string; product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (opts.from === undefined) throw new Error('webhook replay needs --from (an ISO 8601 time)');
      const body = { from: opts.from, to: opts.to ?? new Date().toISOString() };
      const answer = await call<{ ok: true; count: number }>(ctx.authed(), opts.product, 'POST', `/${seg(id)}/replay`, { json: body });
      ctx.out.result(answer, () => `replaying ${answer.count} ${answer.count === 1 ? 'delivery' : 'deliveries'} made from ${body.from} to ${body.to}`);
    });

  webhook.command('rotate-secret')
    .description('a new signing secret, printed this once; the old one still signs for 24 hours')
    .argument('<id>', 'the webhook')
    .option(productOption, productHelp)
    .action(async (id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call<{ ok: true; secret: string; previous_secret_expires_at: string }>(ctx.authed(), opts.product, 'POST', `/${seg(id)}/secret`, { json: {} });
      ctx.out.result(answer, () => fields([['signing secret', answer.secret], ['old secret signs until', answer.previous_secret_expires_at]]));
      ctx.out.note('Store the new secret now: it is shown this once. Deliveries carry signatures of both secrets until the old one expires, so receivers can switch meanwhile.');
    });
}

/** A delivery and its attempts, for people. */
function deliveryLines(d: Delivery): string {
  const head = `${d.id}  ${d.status}  ${d.event.name}${d.event.data === null ? '' : ` ${JSON.stringify(d.event.data.length > 40 ? `${d.event.data.slice(0, 37)}...` : d.event.data)}`}  ${d.created_at}`
    + `${d.resend_of ? `  (again: ${d.resend_of})` : ''}${d.next_at ? `  next try ${d.next_at}` : ''}`;
  const attempts = d.attempts.map((a) => `  #${a.n} ${a.at} ${a.outcome}${a.status === null ? '' : ` ${a.status}`} ${a.latency_ms} ms${a.error ? `: ${a.error}` : ''}${a.answer ? ` ${JSON.stringify(a.answer.length > 60 ? `${a.answer.slice(0, 57)}...` : a.answer)}` : ''}`);
  return [head, ...attempts].join('\n') + '\n';
}
