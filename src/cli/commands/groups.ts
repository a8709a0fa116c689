import type { Command } from 'commander';
import type { GroupView } from '../../services/firmware/groups.js';
import { contextOf, type CliContext } from '../lib/context.js';
import { seg } from '../lib/json-input.js';
import { table } from '../lib/output.js';
import { fields, productOf } from '../lib/resources.js';

const describe = (g: GroupView) => fields([
  ['name', g.name], ['color', g.color], ['description', g.description], ['devices', g.device_count],
  ['firmware released to it', g.fw_version === null ? 'none' : `version ${g.fw_version}`], ['created at', g.created_at], ['updated at', g.updated_at],
]);

interface GroupOptions { product?: string; name?: string; color?: string; description?: string }

const groupBody = (opts: GroupOptions) => ({
  ...(opts.name === undefined ? {} : { name: opts.name }),
  // An empty colour clears it.
  ...(opts.color === undefined ? {} : { color: opts.color === '' ? null : opts.color }),
  ...(opts.description === undefined ? {} : { description: opts.description }),
});

/** Devices into a group (`add`, which creates a group the product lacks) or out of it (`remove`), all or none. */
async function members(ctx: CliContext, how: 'add' | 'remove', group: string, devices: string[], product: string | undefined): Promise<void> {
  const p = await productOf(ctx, product);
  const answer = await p.request<{ ok: true }>('PUT', '/devices', { json: { action: 'groups', devices, metadata: { [how]: [group] } } });
  const n = `${devices.length} device${devices.length === 1 ? '' : 's'}`;
  ctx.out.result({ ...answer, group, devices }, () => (how === 'add' ? `added ${n} to group ${group} (product ${p.ref})` : `took ${n} out of group ${group} (product ${p.ref})`));
}

/**
 * Device groups (docs/firmware.md, "Groups"; docs/api.md, "Device groups"): list, create, edit
 * and delete a product's groups, and add devices to a group or take them out of it.
 */
export function registerGroupCommands(program: Command): void {
  const groups = program.command('groups').alias('group')
    .description('a product\'s device groups, to release firmware to some of its devices (docs/firmware.md, "Groups")');
  const productOption = ['--product <id-or-slug>', 'the product (default: the only one the token manages)'] as const;
  const nameRules = 'lower-case letters a-z, digits, - and _, at most 64';

  groups.command('list')
    .description('the groups: devices in each, the firmware released to each')
    .option('--name <text>', 'only the groups whose name holds this')
    .option(...productOption)
    .action(async (opts: { product?: string; name?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ groups: GroupView[] }>('GET', '/groups', { query: { name: opts.name } });
      ctx.out.result(answer, () => (answer.groups.length === 0 ? `no groups (product ${p.ref})` : table(answer.groups, [
        ['NAME', (g) => g.name],
        ['DEVICES', (g) => g.device_count],
        ['FIRMWARE', (g) => g.fw_version],
        ['COLOR', (g) => g.color],
        ['DESCRIPTION', (g) => g.description],
      ])));
    });

  groups.command('create')
    .description(`a new group (its name: ${nameRules})`)
    .argument('<name>', 'the group\'s name')
    .option('--color <hex>', 'a colour, such as #e74c3c')
    .option('--description <text>', 'a description')
    .option(...productOption)
    .action(async (name: string, opts: GroupOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await (await productOf(ctx, opts.product)).request<{ group: GroupView }>('POST', '/groups', { json: { ...groupBody(opts), name } });
      ctx.out.result(answer, () => describe(answer.group));
    });

  groups.command('edit')
    .description('rename a group, or change its colour or description')
    .argument('<name>', 'the group')
    .option('--name <new-name>', `a new name (${nameRules})`)
    .option('--color <hex>', 'a new colour ("" clears it)')
    .option('--description <text>', 'a new description')
    .option(...productOption)
    .action(async (name: string, opts: GroupOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const body = groupBody(opts);
      if (Object.keys(body).length === 0) throw new Error('groups edit needs --name, --color or --description');
      const answer = await (await productOf(ctx, opts.product)).request<{ group: GroupView }>('PUT', `/groups/${seg(name)}`, { json: body });
      ctx.out.result(answer, () => describe(answer.group));
    });

  groups.command('delete')
    .description('delete a group: its devices leave it, and lose the firmware released to it')
    .argument('<name>', 'the group')
    .option(...productOption)
    .action(async (name: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      await p.request('DELETE', `/groups/${seg(name)}`);
      ctx.out.result({ ok: true, name }, () => `deleted group ${name} of product ${p.ref}`);
    });

  groups.command('add')
    .description('put devices of the product in a group (a new name makes the group)')
    .argument('<name>', 'the group')
    .argument('<device-ids...>', 'the devices')
    .option(...productOption)
    .action(async (name: string, ids: string[], opts: { product?: string }, cmd: Command) => members(await contextOf(cmd), 'add', name, ids, opts.product));

  groups.command('remove')
    .description('take devices out of a group')
    .argument('<name>', 'the group')
    .argument('<device-ids...>', 'the devices')
    .option(...productOption)
    .action(async (name: string, ids: string[], opts: { product?: string }, cmd: Command) => members(await contextOf(cmd), 'remove', name, ids, opts.product));
}
