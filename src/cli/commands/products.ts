import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import type { ImportResult } from '../../services/devices/membership.js';
import type { DeviceView } from '../../services/devices/view.js';
import { contextOf } from '../lib/context.js';
import { progress, table } from '../lib/output.js';
import { emptyPage, fields, pageLine, productOf, required, wholeNumber, type ProductApi } from '../lib/resources.js';

interface Product { id: number; slug: string; name: string; description: string; platform_id: number; user: string | null; groups: string[]; created_at: string }
type Device = Pick<DeviceView, 'id' | 'name' | 'online' | 'development' | 'owner' | 'firmware_version' | 'system_firmware_version' | 'last_heard' | 'notes' | 'groups'>;
interface Paged { page: number; per_page: number; total: number; total_pages: number }
interface TeamMember { username: string; role: string; no_mfa: boolean }

/** The answer of POST /v1/products/:p/devices; every array is always there. */
export type { ImportResult };

/** Ids per request of `product device add`: well under the cloud's 10,000 and 1 MiB, and a progress step. */
export const IMPORT_CHUNK = 1000;

/** Ids as the cloud reads an import file: separated by white space or commas; repeats dropped. */
export function parseIds(text: string): string[] {
  const seen = new Set<string>();
  const ids: string[] = [];
  for (const id of text.split(/[\s,]+/)) {
    const key = id.toLowerCase();
    if (id === '' || seen.has(key)) continue;
    seen.add(key);
    ids.push(id);
  }
  return ids;
}

const RESULT_KINDS = [
  ['updated', 'updatedDeviceIds'],
  ['existing', 'existingDeviceIds'],
  ['nonmember', 'nonmemberDeviceIds'],
  ['invalid', 'invalidDeviceIds'],
  ['protected', 'protectedDeviceIds'],
] as const;

const describeProduct = (p: Product) => fields([
  ['id', p.id],
  ['slug', p.slug],
  ['name', p.name],
  ['description', p.description],
  ['platform id', p.platform_id],
  ['created by', p.user],
  ['created at', p.created_at],
]);

/** Sends the ids in chunks (multipart `file` for a file, `{ids}` otherwise) and adds up the answers. */
async function addDevices(product: ProductApi, ids: string[], file: string | undefined): Promise<ImportResult> {
  const total: ImportResult = { updated: 0, updatedDeviceIds: [], existingDeviceIds: [], nonmemberDeviceIds: [], invalidDeviceIds: [], protectedDeviceIds: [] };
  const bar = ids.length > IMPORT_CHUNK ? progress(ids.length, 'Adding devices') : undefined;
  try {
    for (let i = 0; i < ids.length; i += IMPORT_CHUNK) {
      const chunk = ids.slice(i, i + IMPORT_CHUNK);
      let answer: ImportResult;
      if (file !== undefined) {
        const form = new FormData();
        form.append('file', new Blob([`${chunk.join('\n')}\n`], { type: 'text/plain' }), basename(file));
        answer = await product.request<ImportResult>('POST', '/devices', { body: form });
      } else {
        answer = await product.request<ImportResult>('POST', '/devices', { json: { ids: chunk } });
      }
      total.updated += answer.updated;
      for (const [, key] of RESULT_KINDS) total[key].push(...(answer[key] ?? []));
      bar?.tick(chunk.length);
    }
  } finally {
    bar?.done();
  }
  return total;
}

export function registerProductCommands(program: Command): void {
  const product = program.command('product').description('products, their fleets and teams (--product takes an id or a slug; left out, the only product the token manages)');
  const productOption = ['--product <id-or-slug>', 'the product (default: the only one the token manages)'] as const;

  product.command('create')
    .description('a new product; you are its first team member')
    .option('--name <name>', 'the product\'s name (required)')
    .option('--platform-id <id>', 'the Device OS platform of its devices (required; e.g. 6 Photon, 12 Argon, 13 Boron, 26 Tracker)')
    .option('--description <text>', 'a description')
    .action(async (opts: { name?: string; platformId?: string; description?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const name = required('--name', opts.name, 'product create');
      const platformId = wholeNumber('--platform-id', required('--platform-id', opts.platformId, 'product create')) as number;
      const answer = await ctx.authed().request<{ ok: true; product: Product }>('POST', '/v1/user/products', {
        json: { product: { name, description: opts.description ?? '', platform_id: platformId } },
      });
      ctx.out.result(answer, () => describeProduct(answer.product));
    });

  product.command('list')
    .description('the products you manage')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await ctx.authed().request<{ products: Product[] }>('GET', '/v1/products');
      ctx.out.result(answer, () => (answer.products.length === 0 ? 'no products (create one with `skyport product create`)' : table(answer.products, [
        ['ID', (p) => p.id],
        ['SLUG', (p) => p.slug],
        ['NAME', (p) => p.name],
        ['PLATFORM', (p) => p.platform_id],
        ['DESCRIPTION', (p) => p.description],
      ])));
    });

  product.command('show')
    .description('one product')
    .argument('[product]', 'its id or slug (default: the only product the token manages)')
    .action(async (given: string | undefined, _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, given, 'name one');
      const answer = await p.request<{ product: Product }>('GET', '');
      ctx.out.result(answer, () => describeProduct(answer.product));
    });

  // ---- the fleet ----
  const device = product.command('device').description('the product\'s fleet');

  device.command('add')
    .description('add devices to the product, by id or from a file of ids (one per line); exits 1 when some were not added')
    .argument('[ids...]', 'device ids')
    .option('--file <file>', 'a file of device ids, one per line (or separated by commas or spaces)')
    .option(...productOption)
    .action(async (args: string[], opts: { file?: string; product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (args.length > 0 && opts.file !== undefined) throw new Error('give device ids or --file, not both');
      let ids: string[];
      if (opts.file !== undefined) {
        let text: string;
        try {
          text = await readFile(opts.file, 'utf8');
        } catch (err) {
          throw new Error(`cannot read --file ${opts.file}: ${(err as Error).message}`);
        }
        ids = parseIds(text);
        if (ids.length === 0) throw new Error(`--file ${opts.file} holds no device ids`);
      } else {
        ids = parseIds(args.join('\n'));
        if (ids.length === 0) throw new Error('product device add needs device ids or --file');
      }
      const p = await productOf(ctx, opts.product);
      const result = await addDevices(p, ids, opts.file);
      const rows = RESULT_KINDS.flatMap(([label, key]) => result[key].map((id) => ({ label, id })));
      ctx.out.result(result, () => `${result.updated} of ${ids.length} device id(s) added to product ${p.ref}\n${table(rows, [['RESULT', (r) => r.label], ['DEVICE ID', (r) => r.id]])}`);
      const refused = result.nonmemberDeviceIds.length + result.invalidDeviceIds.length + result.protectedDeviceIds.length;
      if (refused > 0) {
        const parts = [
          result.invalidDeviceIds.length > 0 ? `${result.invalidDeviceIds.length} invalid (malformed, unknown, or of another platform)` : '',
          result.nonmemberDeviceIds.length > 0 ? `${result.nonmemberDeviceIds.length} nonmember (in another product, or owned outside the team)` : '',
          result.protectedDeviceIds.length > 0 ? `${result.protectedDeviceIds.length} protected` : '',
        ].filter((s) => s !== '');
        throw new Error(`${refused} device id(s) not added: ${parts.join(', ')}`);
      }
    });

  device.command('list')
    .description('a page of the fleet')
    .option(...productOption)
    .option('--page <n>', 'the page (default 1)')
    .option('--per-page <n>', 'devices per page (default 25, at most 1000)')
    .option('--id <prefix>', 'devices whose id starts with this')
    .option('--name <name>', 'devices of this name')
    .option('--group <names>', 'devices in any of these groups (separated by commas)')
    .option('--sort <attr>', 'id, name, lastHeard, firmwareVersion or platformId (default id)')
    .option('--sort-dir <dir>', 'asc or desc')
    .action(async (opts: { product?: string; page?: string; perPage?: string; id?: string; name?: string; group?: string; sort?: string; sortDir?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const query = {
        page: wholeNumber('--page', opts.page),
        per_page: wholeNumber('--per-page', opts.perPage),
        deviceId: opts.id,
        deviceName: opts.name,
        groups: opts.group,
        sortAttr: opts.sort,
        sortDir: opts.sortDir,
      };
      if (opts.sortDir !== undefined && opts.sortDir !== 'asc' && opts.sortDir !== 'desc') throw new Error(`--sort-dir must be asc or desc, not "${opts.sortDir}"`);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ devices: Device[]; customers: unknown[]; meta: Paged }>('GET', '/devices', { query });
      ctx.out.result(answer, () => (answer.devices.length === 0 ? emptyPage(answer.meta, 'devices', `product ${p.ref}`) : table(answer.devices, [
        ['ID', (d) => d.id],
        ['NAME', (d) => d.name],
        ['ONLINE', (d) => (d.online ? 'yes' : 'no')],
        ['DEV', (d) => (d.development ? 'yes' : 'no')],
        ['OWNER', (d) => d.owner],
        ['FIRMWARE', (d) => d.firmware_version],
        ['DEVICE OS', (d) => d.system_firmware_version],
        ['LAST HEARD', (d) => d.last_heard],
        ['GROUPS', (d) => (d.groups.length === 0 ? undefined : d.groups.join(','))],
      ]) + pageLine(answer.meta, 'devices')));
    });

  device.command('remove')
    .description('take a device out of the product (its owner is released)')
    .argument('<device-id>', 'the device')
    .option(...productOption)
    .action(async (id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      await p.request('DELETE', `/devices/${encodeURIComponent(id)}`);
      ctx.out.result({ ok: true, id }, () => `removed ${id} from product ${p.ref}`);
    });

  device.command('dev')
    .description('make a device a development device (on) or a regular one (off)')
    .argument('<on|off>', 'on or off')
    .argument('<device-id>', 'the device')
    .option(...productOption)
    .action(async (mode: string, id: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (mode !== 'on' && mode !== 'off') throw new Error(`product device dev takes on or off, not "${mode}"`);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ id: string; development: boolean; updated_at: string }>('PUT', `/devices/${encodeURIComponent(id)}`, { json: { development: mode === 'on' } });
      ctx.out.result(answer, () => `${id} is ${answer.development ? 'a development' : 'a regular'} device now (product ${p.ref})`);
    });

  // ---- the team ----
  const team = product.command('team').description('the people who manage the product');

  team.command('list')
    .description('the team')
    .option(...productOption)
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ ok: true; team: TeamMember[] }>('GET', '/team');
      ctx.out.result(answer, () => table(answer.team, [
        ['USERNAME', (m) => m.username],
        ['ROLE', (m) => m.role],
        ['MFA', (m) => (m.no_mfa ? 'off' : 'on')],
      ]));
    });

  team.command('add')
    .description('add an existing account to the team (at once: there is no invitation)')
    .argument('<username>', 'the account\'s e-mail address')
    .option(...productOption)
    .action(async (username: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ ok: true; username: string; role: string }>('POST', '/team', { json: { username } });
      ctx.out.result(answer, () => `added ${answer.username} to product ${p.ref} (${answer.role})`);
    });

  team.command('remove')
    .description('remove a member from the team (not the last one)')
    .argument('<username>', 'the member\'s e-mail address')
    .option(...productOption)
    .action(async (username: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      await p.request('DELETE', `/team/${encodeURIComponent(username)}`);
      ctx.out.result({ ok: true, username }, () => `removed ${username} from product ${p.ref}`);
    });
}
