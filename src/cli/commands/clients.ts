import type { Command } from 'commander';
import type { Api, RequestOptions } from '../lib/api.js';
import { contextOf } from '../lib/context.js';
import { table } from '../lib/output.js';
import { fields, productApi, required } from '../lib/resources.js';

interface Client { id: string; name: string; type: 'installed' | 'web'; scope: string | null; redirect_uri?: string; product_id?: number | string; secret?: string }

/**
 * The console's kinds of product client, as the API's values (docs/api.md, "OAuth clients";
 * docs/particle-compatibility.md#the-three-console-kinds): Simple Auth mobile app = installed +
 * customers:create; Simple Auth web app = web + redirect URI + customers:create; Two-Legged
 * server = installed, no scope.
 */
const KINDS = {
  'simple-mobile': { type: 'installed', scope: 'customers:create', redirect: false },
  'simple-web': { type: 'web', scope: 'customers:create', redirect: true },
  'two-legged': { type: 'installed', scope: null, redirect: false },
} as const;
type Kind = keyof typeof KINDS;

/** The console kind of a product client; user clients have none. */
export function kindOf(c: Client): string | undefined {
  if (c.product_id === undefined) return undefined;
  if (c.type === 'web') return 'simple-web';
  return c.scope === 'customers:create' ? 'simple-mobile' : 'two-legged';
}

/** A request to the clients of the product given with --product, else of the user of the token. */
function call<T>(api: Api, product: string | undefined, method: string, rest: string, options?: RequestOptions): Promise<T> {
  return product === undefined ? api.request<T>(method, `/v1/clients${rest}`, options) : productApi(api, product).request<T>(method, `/clients${rest}`, options);
}
const owner = (product: string | undefined) => (product === undefined ? 'your account' : `product ${product}`);

interface CreateOptions { name?: string; kind?: string; scope?: string; redirectUri?: string; product?: string }

/** The body of POST …/clients from the flags, or an error that says which flag is wrong. */
export function newClientBody(opts: CreateOptions): Record<string, string> {
  const name = required('--name', opts.name, 'client create').trim();
  if (opts.kind === undefined) {
    const body: Record<string, string> = { name, type: 'installed' };
    if (opts.scope !== undefined) body.scope = opts.scope;
    if (opts.redirectUri !== undefined) body.redirect_uri = opts.redirectUri;
    return body;
  }
  if (!Object.hasOwn(KINDS, opts.kind)) throw new Error(`--kind must be one of ${Object.keys(KINDS).join(', ')}, not "${opts.kind}"`);
  const kind = KINDS[opts.kind as Kind];
  if (opts.product === undefined) throw new Error(`--kind ${opts.kind} makes a product client: add --product (customers belong to a product)`);
  if (opts.scope !== undefined) throw new Error(`--kind ${opts.kind} sets the scope itself (${kind.scope ?? 'full'}); leave --scope out`);
  if (kind.redirect && opts.redirectUri === undefined) throw new Error(`--kind ${opts.kind} needs --redirect-uri (the first page of device setup)`);
  if (!kind.redirect && opts.redirectUri !== undefined) throw new Error('--redirect-uri is for --kind simple-web only');
  const body: Record<string, string> = { name, type: kind.type };
  if (kind.scope !== null) body.scope = kind.scope;
  if (opts.redirectUri !== undefined) body.redirect_uri = opts.redirectUri;
  return body;
}

const describe = (c: Client) => fields([
  ['id', c.id],
  ['name', c.name],
  ...(c.product_id === undefined ? [] : [['product', c.product_id], ['kind', kindOf(c)]] as Array<[string, unknown]>),
  ['type', c.type],
  ['scope', c.scope ?? 'full'],
  ['redirect uri', c.redirect_uri],
  ...(c.secret === undefined ? [] : [['secret', c.secret]] as Array<[string, unknown]>),
]);

export function registerClientCommands(program: Command): void {
  const client = program.command('client').description('OAuth clients of your account, or of a product with --product');
  const productOption = '--product <id-or-slug>';
  const productHelp = 'a product\'s clients (default: your account\'s)';

  client.command('list')
    .description('the clients (never their secrets)')
    .option(productOption, productHelp)
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await call<{ ok: true; clients: Client[] }>(ctx.authed(), opts.product, 'GET', '');
      ctx.out.result(answer, () => (answer.clients.length === 0 ? `no clients (${owner(opts.product)})` : table(answer.clients, [
        ['ID', (c) => c.id],
        ['NAME', (c) => c.name],
        ...(opts.product === undefined ? [] : [['KIND', kindOf]] as Array<[string, (c: Client) => unknown]>),
        ['TYPE', (c) => c.type],
        ['SCOPE', (c) => c.scope ?? 'full'],
        ['REDIRECT URI', (c) => c.redirect_uri],
      ])));
    });

  client.command('create')
    .description('a new client; its secret is printed this once')
    .option('--name <name>', 'the client\'s name (required)')
    .option('--kind <kind>', 'a product client of the console\'s kinds: simple-mobile, simple-web (needs --redirect-uri) or two-legged')
    .option('--scope <scope>', 'without --kind: "customers:create", or "*:*" (full, the default)')
    .option('--redirect-uri <url>', 'where a web client sends the customer once created (simple-web)')
    .option(productOption, 'a client of this product (default: of your account)')
    .action(async (opts: CreateOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const body = newClientBody(opts);
      const answer = await call<{ ok: true; client: Client }>(ctx.authed(), opts.product, 'POST', '', { json: body });
      ctx.out.result(answer, () => describe(answer.client));
      ctx.out.note('Store the secret now: it is shown this once and cannot be read again (a lost secret means a new client). Never put it in a published app unless the client is simple-mobile.');
    });

  client.command('update')
    .description('rename a client or change its scope')
    .argument('<client-id>', 'the client')
    .option('--name <name>', 'the new name')
    .option('--scope <scope>', '"customers:create", or "*:*" (full)')
    .option(productOption, 'a client of this product (default: of your account)')
    .action(async (id: string, opts: { name?: string; scope?: string; product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (opts.name === undefined && opts.scope === undefined) throw new Error('client update needs --name or --scope');
      const body: Record<string, string> = {};
      if (opts.name !== undefined) body.name = opts.name;
      if (opts.scope !== undefined) body.scope = opts.scope;
      const answer = await call<{ ok: true; client: Client }>(ctx.authed(), opts.product, 'PUT', `/${encodeURIComponent(id)}`, { json: body });
      ctx.out.result(answer, () => describe(answer.client));
    });

  client.command('delete')
    .description('delete a client; every token it made is revoked')
    .argument('<client-id>', 'the client')
    .option(productOption, 'a client of this product (default: of your account)')
    .action(async (id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      await call(ctx.authed(), opts.product, 'DELETE', `/${encodeURIComponent(id)}`);
      ctx.out.result({ ok: true, id }, () => `deleted client ${id} of ${owner(opts.product)}; the tokens it made are revoked`);
    });
}
