import type { Command } from 'commander';
import { createApi } from '../lib/api.js';
import { contextOf } from '../lib/context.js';
import { table } from '../lib/output.js';
import { password } from '../lib/prompt.js';
import { emptyPage, fields, pageLine, productApi, productRef, required, wholeNumber } from '../lib/resources.js';

interface Customer { id: string; username: string; shadow: boolean; created_at: string; devices: string[] }
interface TokenAnswer { token_type: string; access_token: string; expires_in: number; refresh_token?: string }

interface CreateOptions { product?: string; email?: string; shadow?: boolean; clientId?: string; clientSecret?: string }

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

export function registerCustomerCommands(program: Command): void {
  const customer = program.command('customer').description('customers of a product (simple and two-legged authentication; docs/api.md, "Customers")');
  const productHelp = 'the product (default: the only one the token manages)';

  customer.command('create')
    .description('create a customer with the product\'s client credentials (not a token) and print its tokens; the password is asked (or SKYPORT_PASSWORD, or standard input) unless --shadow')
    .option('--product <id-or-slug>', 'the product (required)')
    .option('--email <email>', 'the customer\'s e-mail address (required)')
    .option('--shadow', 'a shadow customer, without a password (two-legged authentication: no_password=true)')
    .option('--client-id <id>', 'a client of the product (default: $SKYPORT_CLIENT_ID)')
    .option('--client-secret <secret>', 'its secret (default: $SKYPORT_CLIENT_SECRET; a simple-web client needs none)')
    .action(async (opts: CreateOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const product = required('--product', opts.product, 'customer create');
      const email = required('--email', opts.email, 'customer create').trim();
      const clientId = opts.clientId ?? process.env.SKYPORT_CLIENT_ID;
      const clientSecret = opts.clientSecret ?? process.env.SKYPORT_CLIENT_SECRET;
      if (clientId === undefined || clientId === '') throw new Error('customer create needs the product client\'s credentials: --client-id (or SKYPORT_CLIENT_ID) and --client-secret (or SKYPORT_CLIENT_SECRET)');
      const body: Record<string, unknown> = opts.shadow ? { email, no_password: true } : { email, password: await password('Customer password: ') };
      // Client credentials only: HTTP Basic with a secret, or a web client's ID alone as a field.
      const headers: Record<string, string> = {};
      if (clientSecret !== undefined && clientSecret !== '') headers.authorization = basic(clientId, clientSecret);
      else body.client_id = clientId;
      const answer = await productApi(ctx.api, product).request<TokenAnswer>('POST', '/customers', { json: body, headers, anonymous: true });
      ctx.out.result(answer, () => fields([
        ['customer', email],
        ['access token', answer.access_token],
        ['expires in', `${answer.expires_in} s`],
        ['refresh token', answer.refresh_token],
      ]));
      if (!ctx.out.json) ctx.out.note('The tokens are not stored anywhere: hand them to the customer\'s app now.');
    });

  customer.command('list')
    .description('a page of the product\'s customers')
    .option('--product <id-or-slug>', productHelp)
    .option('--page <n>', 'the page (default 1)')
    .option('--per-page <n>', 'customers per page (default 25)')
    .action(async (opts: { product?: string; page?: string; perPage?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const query = { page: wholeNumber('--page', opts.page), per_page: wholeNumber('--per-page', opts.perPage) };
      const api = ctx.authed();
      const p = productApi(api, await productRef(api, opts.product));
      const answer = await p.request<{ customers: Customer[]; meta: { page: number; per_page: number; total: number; total_pages: number } }>('GET', '/customers', { query });
      ctx.out.result(answer, () => (answer.customers.length === 0 ? emptyPage(answer.meta, 'customers', `product ${p.ref}`) : table(answer.customers, [
        ['EMAIL', (c) => c.username],
        ['SHADOW', (c) => (c.shadow ? 'yes' : 'no')],
        ['DEVICES', (c) => (c.devices.length === 0 ? undefined : c.devices.join(','))],
        ['CREATED', (c) => c.created_at],
      ]) + pageLine(answer.meta, 'customers')));
    });

  customer.command('delete')
    .description('delete a customer: its tokens and claim codes are revoked, its devices released')
    .argument('<email>', 'the customer\'s e-mail address')
    .option('--product <id-or-slug>', productHelp)
    .action(async (email: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = ctx.authed();
      const p = productApi(api, await productRef(api, opts.product));
      await p.request('DELETE', `/customers/${encodeURIComponent(email)}`);
      ctx.out.result({ ok: true, email }, () => `deleted customer ${email} of product ${p.ref}`);
    });

  program.command('claim-code')
    .description('a claim code for a device to present (valid one hour, single use); with --product, for the customer whose token is used')
    .option('--product <id-or-slug>', 'a product whose customer asks (the token must be that customer\'s)')
    .option('--token <token>', 'the access token to ask with (default: $SKYPORT_TOKEN, else the profile\'s)')
    .action(async (opts: { product?: string; token?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = opts.token !== undefined ? createApi(ctx.api.baseUrl, opts.token) : ctx.authed();
      // An empty JSON body: these routes refuse a POST without one (400 "body must be object").
      const answer = opts.product === undefined
        ? await api.request<{ claim_code: string; device_ids: string[] }>('POST', '/v1/device_claims', { json: {} })
        : await productApi(api, opts.product).request<{ claim_code: string; device_ids: string[] }>('POST', '/device_claims', { json: {} });
      ctx.out.result(answer, () => answer.claim_code);
      if (!ctx.out.json) {
        ctx.out.note(`Single use, valid for an hour${answer.device_ids.length > 0 ? `; devices already owned: ${answer.device_ids.join(', ')}` : ''}.`);
      }
    });
}
