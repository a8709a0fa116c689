import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import type { VersionProgress } from '../../domain/firmware-updates.js';
import type { FirmwareView } from '../../services/firmware/images.js';
import { readModule } from '../../services/firmware/module.js';
import { refusalOf } from '../lib/api.js';
import { contextOf, type CliContext } from '../lib/context.js';
import { readBinary, seg, wholeNumberOf } from '../lib/json-input.js';
import { table } from '../lib/output.js';
import { fields, productOf, productRef } from '../lib/resources.js';

/**
 * Product firmware (docs/firmware.md; docs/api.md, "Firmware"): upload a binary, list, show,
 * edit, delete and download versions, release one to the fleet or to groups, and where the
 * devices' updates stand.
 */
type Released = FirmwareView & { warnings: string[] };
interface Impact { devices: { firmware_update: { total: number; by_version: Array<{ version: number; total: number }> } } }

const MAX_VERSION = 65535;
const versionOf = (raw: string) => wholeNumberOf('the version', raw, 1, MAX_VERSION);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const by = (f: FirmwareView) => f.uploaded_by.username ?? (f.uploaded_by.kind === 'product' ? 'product token' : 'deleted account');

/** Where a version is released, in words: the fleet (product default), groups, or nowhere. */
export function releasedTo(f: Pick<FirmwareView, 'product_default' | 'groups' | 'released_at'>): string {
  const places = [...(f.product_default ? ['product default'] : []), ...(f.groups.length > 0 ? [`groups ${f.groups.join(',')}`] : [])];
  return places.length > 0 ? places.join(', ') : f.released_at ? 'no longer released' : 'not released';
}

const describe = (f: FirmwareView) => fields([
  ['version', f.version], ['title', f.title], ['description', f.description], ['file', f.name], ['size', `${f.size} bytes`],
  ['sha256', f.sha256], ['platform id', f.platform_id], ['running it', `${f.device_count} device(s)`], ['released to', releasedTo(f)],
  ['released at', f.released_at], ['update online devices at once', f.intelligent ? 'yes' : 'no'], ['signed', f.signed ? 'yes' : 'no'],
  ['uploaded at', f.uploaded_at], ['uploaded by', by(f)],
]);

/** "3 devices would update (2 from version 1, 1 that reported none)". */
export function impactLine(i: Impact['devices']['firmware_update']): string {
  if (i.total === 0) return 'no device would update now';
  const from = i.by_version.map((v) => (v.version === 0 ? `${v.total} that reported no version` : `${v.total} from version ${v.version}`));
  return `${i.total} device${i.total === 1 ? '' : 's'} would update (${from.join(', ')})`;
}

/** Group names from --groups (commas) and repeated --group flags; undefined when neither was given. */
function groupsOf(opts: { groups?: string; group?: string[] }): string[] | undefined {
  if (opts.groups === undefined && opts.group === undefined) return undefined;
  const names = [...(opts.groups ?? '').split(','), ...(opts.group ?? [])].map((s) => s.trim()).filter((s) => s !== '');
  return [...new Set(names)];
}

interface ReleaseOptions { product?: string; default?: boolean; groups?: string; group?: string[]; intelligent?: boolean; signature?: string; dryRun?: boolean }

async function release(ctx: CliContext, raw: string, opts: ReleaseOptions): Promise<void> {
  const version = versionOf(raw);
  const p = await productOf(ctx, opts.product);
  const groups = groupsOf(opts);
  if (opts.dryRun) {
    // The impact route reads a left-out field as "none"; the release keeps what is left out.
    const now = await p.request<FirmwareView>('GET', `/firmware/${version}`);
    const query = { action: 'edit_groups_for_firmware', firmware_version: String(version), groups: (groups ?? now.groups).join(','), product_default: String(opts.default ?? now.product_default) };
    const impact = await p.request<Impact>('GET', '/impact', { query });
    ctx.out.result(impact, () => `dry run: releasing version ${version} to ${releasedTo({ product_default: opts.default ?? now.product_default, groups: groups ?? now.groups, released_at: now.released_at })}: ${impactLine(impact.devices.firmware_update)}; nothing released`);
    return;
  }
  const body = {
    version,
    ...(opts.default === undefined ? {} : { product_default: opts.default }),
    ...(groups === undefined ? {} : { groups }),
    ...(opts.intelligent ? { intelligent: true } : {}),
    ...(opts.signature === undefined ? {} : { signature: opts.signature }),
  };
  const answer = await p.request<Released>('PUT', '/firmware/release', { json: body });
  ctx.out.result(answer, () => `released version ${answer.version} of product ${p.ref}: ${releasedTo(answer)}${answer.intelligent ? '; online devices update now' : '; devices update when they next connect'}`);
  for (const w of answer.warnings) ctx.out.note(`warning: ${w}`);
}

async function upload(ctx: CliContext, file: string, given: string | undefined, opts: { product?: string; title?: string; description?: string; signature?: string }): Promise<void> {
  let version = given === undefined ? undefined : versionOf(given);
  const image = await readBinary(file);
  if (version === undefined) {
    // The version the binary carries, as the server will check it.
    const m = await readModule(image);
    if (m?.productVersion === null || m?.productVersion === undefined) throw new Error(`${file} carries no product version in a module suffix: give the version after the file`);
    version = m.productVersion;
  }
  const form = new FormData();
  form.append('version', String(version));
  if (opts.title !== undefined) form.append('title', opts.title);
  if (opts.description !== undefined) form.append('description', opts.description);
  if (opts.signature !== undefined) form.append('signature', opts.signature);
  form.append('file', new Blob([image], { type: 'application/octet-stream' }), basename(file));
  const p = await productOf(ctx, opts.product);
  const answer = await p.request<FirmwareView>('POST', '/firmware', { body: form });
  ctx.out.result(answer, () => `uploaded version ${answer.version} (${answer.title}, ${answer.size} bytes) to product ${p.ref}; release it with \`skyport firmware release ${answer.version}\``);
}

async function download(ctx: CliContext, raw: string, opts: { product?: string; out?: string }): Promise<void> {
  const version = versionOf(raw);
  const api = ctx.authed();
  const ref = await productRef(api, opts.product);
  const res = await api.fetch('GET', `/v1/products/${seg(ref)}/firmware/${version}/binary`, { headers: { accept: 'application/octet-stream' } });
  if (!res.ok) throw await refusalOf(res);
  const image = Buffer.from(await res.arrayBuffer());
  const named = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1];
  const out = opts.out ?? basename(named ?? `firmware-${version}.bin`);
  if (out === '-') {
    process.stdout.write(image);
    return;
  }
  // A new file only: an existing one may be another version's binary.
  let fh;
  try {
    fh = await open(out, 'wx');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(e.code === 'EEXIST' ? `${out} exists: move it away or choose another --out` : `cannot write ${out}: ${e.message}`);
  }
  try {
    await fh.writeFile(image);
  } finally {
    await fh.close();
  }
  ctx.out.result({ ok: true, version, out, size: image.length }, () => `wrote version ${version} (${image.length} bytes) to ${out}`);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerFirmwareCommands(program: Command): void {
  const firmware = program.command('firmware').description('a product\'s firmware: upload, list, release to the fleet or to groups, download (docs/firmware.md)');
  const productOption = ['--product <id-or-slug>', 'the product (default: the only one the token manages)'] as const;

  firmware.command('upload')
    .description('upload a binary (the .bin the compiler made); its module suffix must name the product and the version')
    .argument('<file>', 'the binary')
    .argument('[version]', 'the version, 1 to 65535 (default: the product version in the binary\'s module suffix)')
    .option('--title <text>', 'a title (default: "Version N")')
    .option('--description <text>', 'a description')
    .option('--signature <base64>', 'the Ed25519 signature of the binary, when the product has a signing key')
    .option(...productOption)
    .action(async (file: string, version: string | undefined, opts, cmd: Command) => upload(await contextOf(cmd), file, version, opts));

  firmware.command('list')
    .description('the versions, newest first: title, size, devices running each, where each is released, who uploaded it')
    .option(...productOption)
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      const list = await p.request<FirmwareView[]>('GET', '/firmware');
      ctx.out.result(list, () => (list.length === 0 ? `no firmware (product ${p.ref}): upload some with \`skyport firmware upload\`` : table(list, [
        ['VERSION', (f) => f.version],
        ['TITLE', (f) => f.title],
        ['SIZE', (f) => kib(f.size)],
        ['DEVICES', (f) => f.device_count],
        ['RELEASED TO', releasedTo],
        ['UPLOADED', (f) => f.uploaded_at],
        ['BY', by],
      ])));
    });

  firmware.command('get')
    .description('one version')
    .argument('<version>', 'the version')
    .option(...productOption)
    .action(async (raw: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await (await productOf(ctx, opts.product)).request<FirmwareView>('GET', `/firmware/${versionOf(raw)}`);
      ctx.out.result(answer, () => describe(answer));
    });

  firmware.command('edit')
    .description('change a version\'s title or description (the binary never changes)')
    .argument('<version>', 'the version')
    .option('--title <text>', 'a new title')
    .option('--description <text>', 'a new description ("" clears it)')
    .option(...productOption)
    .action(async (raw: string, opts: { product?: string; title?: string; description?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const version = versionOf(raw);
      if (opts.title === undefined && opts.description === undefined) throw new Error('firmware edit needs --title or --description');
      const body = { ...(opts.title === undefined ? {} : { title: opts.title }), ...(opts.description === undefined ? {} : { description: opts.description }) };
      const answer = await (await productOf(ctx, opts.product)).request<FirmwareView>('PUT', `/firmware/${version}`, { json: body });
      ctx.out.result(answer, () => describe(answer));
    });

  firmware.command('delete')
    .description('delete a version never released, to which no device is locked')
    .argument('<version>', 'the version')
    .option(...productOption)
    .action(async (raw: string, opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const version = versionOf(raw);
      const p = await productOf(ctx, opts.product);
      await p.request('DELETE', `/firmware/${version}`);
      ctx.out.result({ ok: true, version }, () => `deleted version ${version} of product ${p.ref}`);
    });

  firmware.command('release')
    .description('release a version: as the product default and/or to exactly the groups given; what is left out stays as it is (neither: it becomes the product default)')
    .argument('<version>', 'the version')
    .option('--default', 'make it the product default (the fleet\'s release)')
    .option('--no-default', 'stop it being the product default')
    .option('--groups <names>', 'release it to exactly these groups, separated by commas ("" for none)')
    .option('--group <name>', 'a group to release it to (repeat for more); with --groups, added to them', collect)
    .option('--intelligent', 'update the online devices now, not when they next connect')
    .option('--signature <base64>', 'the Ed25519 signature of the binary, when the product has a signing key and the upload had none')
    .option('--dry-run', 'say how many devices the release would update, and release nothing')
    .option(...productOption)
    .action(async (raw: string, opts: ReleaseOptions, cmd: Command) => release(await contextOf(cmd), raw, opts));

  firmware.command('progress')
    .description('where the devices\' updates stand, by version: offered, updated, applying, downloading, waiting, failed')
    .option(...productOption)
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const p = await productOf(ctx, opts.product);
      const answer = await p.request<{ versions: VersionProgress[] }>('GET', '/firmware/updates');
      ctx.out.result(answer, () => (answer.versions.length === 0 ? `no updates yet (product ${p.ref})` : table(answer.versions, [
        ['VERSION', (v) => v.version],
        ['DEVICES', (v) => v.total],
        ['UPDATED', (v) => v.states.succeeded],
        ['APPLYING', (v) => v.states.applying],
        ['DOWNLOADING', (v) => v.states.downloading],
        ['WAITING', (v) => v.states.pending],
        ['FAILED', (v) => v.states.failed],
      ])));
    });

  firmware.command('download')
    .description('save a version\'s binary, as uploaded')
    .argument('<version>', 'the version')
    .option('--out <file>', 'a new file to write (default: the uploaded file\'s name in this folder; "-" for standard output)')
    .option(...productOption)
    .action(async (raw: string, opts: { product?: string; out?: string }, cmd: Command) => download(await contextOf(cmd), raw, opts));
}
