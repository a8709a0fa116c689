import { open, unlink, type FileHandle } from 'node:fs/promises';
import { Argument, type Command } from 'commander';
import type { Api } from '../lib/api.js';
import { contextOf, type CliContext } from '../lib/context.js';
import { progress, table } from '../lib/output.js';
import { needed, seg, wholeNumberOf } from '../lib/json-input.js';
import { fields } from '../lib/resources.js';
import type { DeviceView as ServedDevice } from '../../services/devices/view.js';

/**
 * Devices (docs/api.md, "Devices" and "Calling devices"): provisioning (with the secrets written
 * once, to a file only the user can read), the caller's devices and a product's fleet, rename,
 * ping, signal; and `call` / `get` on a connected device.
 */
type DeviceView = Pick<ServedDevice, 'id' | 'name' | 'product_id' | 'platform_id' | 'online' | 'last_heard' | 'last_ip_address' | 'system_firmware_version'
  | 'firmware_version' | 'development' | 'owner' | 'notes' | 'functions' | 'variables' | 'status'>;
interface Credential { id: string; device_secret: string }

/** Devices a bulk request asks for: small enough for the progress bar to move, well under the API's 10,000. */
const CHUNK = 1000;
const MAX_PROVISION = 1_000_000;

const yesNo = (b: unknown) => (b ? 'yes' : 'no');

const deviceTable = (devices: readonly DeviceView[]) => (devices.length === 0 ? 'no devices\n' : table(devices, [
  ['ID', (d) => d.id],
  ['NAME', (d) => d.name],
  ['ONLINE', (d) => yesNo(d.online)],
  ['LAST HEARD', (d) => d.last_heard],
  ['PRODUCT', (d) => d.product_id],
  ['DEVICE OS', (d) => d.system_firmware_version],
  ['FIRMWARE', (d) => d.firmware_version],
]));

/** The credentials file: CSV (`device_id,device_secret`, as the API's CSV) or, for a `.json` name, a JSON array. */
const credentialsText = (file: string, made: readonly Credential[]) => (/\.json$/i.test(file)
  ? `${JSON.stringify(made.map((m) => ({ id: m.id, device_secret: m.device_secret })), null, 2)}\n`
  : ['device_id,device_secret', ...made.map((m) => `${m.id},${m.device_secret}`)].join('\n') + '\n');

/**
 * Opens the credentials file before any secret exists, so that a bad path costs nothing. It must
 * be new: an existing file may hold secrets that cannot be shown again.
 */
async function openSecretFile(file: string): Promise<FileHandle> {
  try {
    const fh = await open(file, 'wx', 0o600);
    await fh.chmod(0o600); // the umask may have taken bits away; say exactly what it is
    return fh;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EEXIST') throw new Error(`${file} exists; it may hold device secrets that cannot be shown again: move it away or choose another --out`);
    throw new Error(`cannot write --out ${file}: ${e.message}`);
  }
}

interface ProvisionOptions { product?: string; count?: string; out?: string }

async function provision(ctx: CliContext, opts: ProvisionOptions): Promise<void> {
  const api = ctx.authed();
  const product = needed('--product', opts.product, 'provisioning');
  const count = opts.count === undefined ? 1 : wholeNumberOf('--count', opts.count, 1, MAX_PROVISION);
  const file = opts.out ? await openSecretFile(opts.out) : undefined;
  const made: Credential[] = [];
  // Ctrl-C lets the request under way finish: the secrets it makes exist only in its answer.
  let stopping = false;
  const onSignal = () => {
    if (stopping) process.exit(130);
    stopping = true;
    ctx.out.note('\nstopping after the request under way (Ctrl-C again to quit at once and lose its secrets)');
  };
  process.on('SIGINT', onSignal);
  const bar = count > 1 ? progress(count, 'provisioning') : undefined;
  let failure: unknown;
  try {
    if (count === 1) {
      made.push(await api.request<DeviceView & Credential>('POST', '/v1/devices', { json: { product_id: /^\d+$/.test(product) ? Number(product) : product } }));
    } else {
      while (made.length < count && !stopping) {
        const quantity = Math.min(CHUNK, count - made.length);
        const answer = await api.request<{ devices: Credential[] }>('POST', `/v1/products/${seg(product)}/device_identities`, { json: { quantity } });
        made.push(...answer.devices);
        bar?.tick(answer.devices.length);
      }
    }
  } catch (err) {
    failure = err;
  } finally {
    bar?.done();
    process.off('SIGINT', onSignal);
  }

  if (file && opts.out) {
    if (made.length > 0) await file.writeFile(credentialsText(opts.out, made));
    await file.close();
    if (made.length === 0) await unlink(opts.out).catch(() => undefined);
  }
  if (made.length > 0) {
    const n = made.length;
    if (opts.out) {
      ctx.out.result({ ok: true, product, count: n, out: opts.out, devices: made.map((m) => ({ id: m.id })) },
        () => `provisioned ${n} device${n === 1 ? '' : 's'} in product ${product}; credentials in ${opts.out} (readable by you alone)`);
      ctx.out.note(`warning: device secrets are shown once: ${opts.out} is their only copy; keep it safe`);
    } else {
      ctx.out.result({ ok: true, product, count: n, devices: made },
        () => table(made, [['ID', (m) => m.id], ['SECRET', (m) => m.device_secret]]));
      ctx.out.note('warning: device secrets are shown once: store them now (--out FILE writes them to a file only you can read)');
    }
  }
  if (failure !== undefined) {
    if (made.length === 0) throw failure;
    throw new Error(`provisioning stopped after ${made.length} of ${count} devices: ${(failure as Error).message}`);
  }
  if (made.length < count) throw new Error(`stopped after ${made.length} of ${count} devices`);
}

/** Every device of a product's fleet, a page of 1,000 at a time. */
async function fleet(api: Api, product: string): Promise<DeviceView[]> {
  const all: DeviceView[] = [];
  for (let page = 1; ; page++) {
    const answer = await api.request<{ devices: DeviceView[]; meta: { total_pages: number } }>('GET', `/v1/products/${seg(product)}/devices`, { query: { page, per_page: 1000 } });
    all.push(...answer.devices);
    if (page >= answer.meta.total_pages || answer.devices.length === 0) return all;
  }
}

export function registerDeviceCommands(program: Command): void {
  const device = program.command('device').description('devices: provision, list, show, rename, ping, signal (docs/api.md, "Devices")');

  device.command('provision')
    .description('new device identities in a product, each with its secret (shown once); --count N uses the bulk route')
    .option('--product <idOrSlug>', 'the product (required)')
    .option('--count <n>', 'how many devices (default 1)')
    .option('--out <file>', 'write the credentials to this new file, readable by you alone: CSV, or JSON for a name ending in .json')
    .action(async (opts: ProvisionOptions, cmd: Command) => provision(await contextOf(cmd), opts));

  device.command('list')
    .description("the caller's devices, or with --product the product's fleet")
    .option('--product <idOrSlug>', "list this product's fleet")
    .action(async (opts: { product?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = ctx.authed();
      const devices = opts.product !== undefined
        ? await fleet(api, needed('--product', opts.product, 'device list'))
        : await api.request<DeviceView[]>('GET', '/v1/devices');
      ctx.out.result(devices, () => deviceTable(devices));
      if (devices.length === 0 && opts.product === undefined && !ctx.out.json) {
        ctx.out.note('(provisioned devices belong to their product until someone claims them: `skyport device list --product P` lists a fleet)');
      }
    });

  device.command('show')
    .description('one device, by id (or by name, for its owner)')
    .argument('<device>', 'device id or name')
    .action(async (id: string, _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const d = await ctx.authed().request<DeviceView>('GET', `/v1/devices/${seg(id)}`);
      ctx.out.result(d, () => fields([
        ['id', d.id], ['name', d.name], ['product', d.product_id], ['platform', d.platform_id], ['online', yesNo(d.online)],
        ['last heard', d.last_heard], ['last address', d.last_ip_address], ['device os', d.system_firmware_version],
        ['firmware', d.firmware_version], ['development', yesNo(d.development)], ['owner', d.owner], ['notes', d.notes],
        ['functions', d.functions.join(', ')], ['variables', Object.entries(d.variables).map(([k, t]) => `${k} (${t})`).join(', ')],
      ]));
    });

  device.command('rename')
    .description('give a device a new name')
    .argument('<device>', 'device id or name')
    .argument('<name>', 'the new name')
    .action(async (id: string, name: string, _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await ctx.authed().request<{ id: string; name: string }>('PUT', `/v1/devices/${seg(id)}`, { json: { name } });
      ctx.out.result(answer, () => `renamed ${answer.id} to ${answer.name}`);
    });

  device.command('ping')
    .description('whether the device is connected now')
    .argument('<device>', 'device id or name')
    .action(async (id: string, _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await ctx.authed().request<{ online: boolean }>('PUT', `/v1/devices/${seg(id)}/ping`);
      ctx.out.result(answer, () => `${id} is ${answer.online ? 'online' : 'offline'}`);
    });

  device.command('signal')
    .description('make a connected device signal (shout rainbows), or stop')
    .argument('<device>', 'device id or name')
    .addArgument(new Argument('<state>', 'on or off').choices(['on', 'off']))
    .action(async (id: string, state: 'on' | 'off', _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const answer = await ctx.authed().request<{ id: string; signaling: boolean }>('PUT', `/v1/devices/${seg(id)}`, { json: { signal: state === 'on' ? '1' : '0' } });
      ctx.out.result(answer, () => `${answer.id} ${answer.signaling ? 'is signalling' : 'stopped signalling'}`);
    });

  program.command('call')
    .description('call a function of a connected device; prints its return value')
    .argument('<device>', 'device id or name')
    .argument('<function>', 'the function')
    .argument('[arg]', 'its argument (default empty)')
    .option('--timeout <seconds>', "how long to wait for the device (default: the cloud's, 10 s)")
    .action(async (id: string, fn: string, arg: string | undefined, opts: { timeout?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const timeout = opts.timeout === undefined ? undefined : wholeNumberOf('--timeout', opts.timeout, 1, 3600);
      const answer = await ctx.authed().request<{ return_value: number }>('POST', `/v1/devices/${seg(id)}/${seg(fn)}`, { json: { arg: arg ?? '', ...(timeout ? { timeout } : {}) } });
      ctx.out.result(answer, () => String(answer.return_value));
    });

  program.command('get')
    .description('read a variable of a connected device; prints its value')
    .argument('<device>', 'device id or name')
    .argument('<variable>', 'the variable')
    .option('--timeout <seconds>', "how long to wait for the device (default: the cloud's, 10 s)")
    .action(async (id: string, variable: string, opts: { timeout?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const timeout = opts.timeout === undefined ? undefined : wholeNumberOf('--timeout', opts.timeout, 1, 3600);
      const answer = await ctx.authed().request<{ result: unknown }>('GET', `/v1/devices/${seg(id)}/${seg(variable)}`, { query: { timeout } });
      ctx.out.result(answer, () => String(answer.result));
    });
}
