import { chmodSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Identity, SimulationProgress } from '../../sim/simulator.js';

interface SimOptions {
  count?: string;
  product?: string;
  apiUrl?: string;
  mqttUrl?: string;
  token?: string;
  credentials?: string;
  out?: string;
  duration?: string;
  concurrency?: string;
  connectTimeout?: string;
  json?: boolean;
  listening?: boolean;
  softapHost?: string;
  softapHttpPort?: string;
  softapTcpPort?: string;
  wifi?: string;
  platformId?: string;
  firmwareVersion?: string;
  updatesDisabled?: boolean;
  failUpdates?: string;
}

const positive = (raw: string | undefined, name: string, fallback: number, max: number): number => {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) throw new Error(`--${name} must be a whole number from 1 to ${max}`);
  return Number(raw);
};

/**
 * Provisions `count` identities in the product through the API (at most 10,000 a request) into
 * `out`. A request under way is let finish on Ctrl-C: the secrets it makes are shown only once.
 */
async function provision(apiUrl: string, token: string, product: string, count: number, out: Identity[], progress: (n: number) => void, signal: AbortSignal): Promise<void> {
  while (out.length < count && !signal.aborted) {
    const quantity = Math.min(10_000, count - out.length);
    const res = await fetch(`${apiUrl}/v1/products/${encodeURIComponent(product)}/device_identities`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ quantity }),
    }).catch((err: Error & { cause?: Error }) => {
      throw new Error(`cannot reach the API at ${apiUrl}: ${err.cause?.message ?? err.message}`);
    });
    const body = (await res.json().catch(() => ({}))) as { devices?: Array<{ id: string; device_secret: string }>; error_description?: string; error?: string };
    if (res.status !== 201 || !body.devices) throw new Error(`provisioning failed (${res.status}): ${body.error_description ?? body.error ?? 'no answer'}`);
    out.push(...body.devices.map((d) => ({ id: d.id, secret: d.device_secret })));
    progress(out.length);
  }
}

/** A progress line on stderr: a bar on a terminal, a line every second otherwise. */
function progressPrinter(label: string) {
  const tty = process.stderr.isTTY === true;
  let last = 0;
  return {
    update(done: number, total: number, extra = '') {
      const now = Date.now();
      if (!tty && now - last < 1000 && done < total) return;
      last = now;
      const width = 30;
      const filled = total === 0 ? width : Math.round((done / total) * width);
      const line = `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}${extra}`;
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    },
    end() {
      if (tty) process.stderr.write('\n');
    },
  };
}

export function registerSimCommand(program: Command): void {
  program.command('sim')
    .description('run simulated devices against a cloud (the load generator of the benchmarks)')
    .option('--count <n>', 'devices to provision and connect', undefined)
    .option('--product <idOrSlug>', 'product to provision the devices in')
    .option('--credentials <file>', 'connect these identities (CSV or JSON from provisioning) instead of provisioning')
    .option('--out <file>', 'write the provisioned identities to this CSV file')
    .option('--mqtt-url <url>', 'MQTT URL (default SKYPORT_MQTT_URL or the API host on port 1883)')
    .option('--token <token>', 'access token (default SKYPORT_TOKEN)')
    .option('--concurrency <n>', 'connections opened at once', '200')
    .option('--connect-timeout <seconds>', 'a device not online after this long counts as failed', '30')
    .option('--duration <seconds>', 'stop after this long (default: run until Ctrl-C)')
    .option('--listening', 'start the devices of --credentials in listening mode, to be set up by an app (docs/sdk.md, "Listening mode")')
    .option('--softap-host <address>', 'address of the setup servers in listening mode', '127.0.0.1')
    .option('--softap-http-port <port>', 'HTTP setup port of the first device, the next ones follow (0: any free port)', '0')
    .option('--softap-tcp-port <port>', 'TCP setup port of the first device, the next ones follow (0: any free port)', '0')
    .option('--wifi <file>', 'the Wi-Fi networks around the devices: a JSON list of {ssid, password, security, channel, rssi}')
    .option('--platform-id <id>', 'Device OS platform of the devices (cellular ones, e.g. 13, have no Wi-Fi step)')
    .option('--firmware-version <n>', 'product firmware version the devices run when they start')
    .option('--updates-disabled', 'the devices start with firmware updates disabled (as System.disableUpdates())')
    .option('--fail-updates <shares>', 'shares of firmware updates the devices fail, e.g. refuse=0.1,check=0.05,vanish=0.05,revert=0.02')
    // --api-url and --json are the command line's global options (src/cli/lib/context.ts).
    .action(async (_opts: SimOptions, cmd: Command) => {
      const opts = cmd.optsWithGlobals<SimOptions>();
      // Ctrl-C at any point (provisioning, connecting, running) stops cleanly: devices get a
      // DISCONNECT rather than a dropped socket, so the cloud publishes no will for them.
      const stopping = new AbortController();
      const stop = () => stopping.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        if (opts.listening) await listen(opts, stopping.signal);
        else await simulate(opts, stopping.signal);
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}

/** A whole number from 0 to `max` (`what` names it in the error). */
function whole(raw: string, name: string, max: number, what = 'whole number'): number {
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new Error(`--${name} must be a ${what} from 0 to ${max}`);
  return Number(raw);
}

const port = (raw: string | undefined, name: string): number => (raw === undefined ? 0 : whole(raw, name, 65_535, 'port number'));

/** The API and the MQTT URL: the options, else the environment, else the API's host on 1883. */
function addresses(opts: SimOptions): { apiUrl: string; mqttUrl: string } {
  const apiUrl = (opts.apiUrl ?? process.env.SKYPORT_API_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
  return { apiUrl, mqttUrl: opts.mqttUrl ?? process.env.SKYPORT_MQTT_URL ?? `mqtt://${new URL(apiUrl).hostname}:1883` };
}

const durationOf = (opts: SimOptions): number | undefined => (opts.duration === undefined ? undefined : positive(opts.duration, 'duration', 1, 7 * 86400));

/** Until Ctrl-C, or `duration` seconds. */
function runUntilStopped(signal: AbortSignal, duration: number | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = duration === undefined ? undefined : setTimeout(resolve, duration * 1000);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

/**
 * `--listening`: each device of the file in listening mode on its own setup ports, one line per
 * device with its addresses, then a line per step of its setup (with --json, one JSON object per
 * line: {device, message}).
 */
async function listen(opts: SimOptions, signal: AbortSignal): Promise<void> {
  if (!opts.credentials) throw new Error('--listening needs --credentials FILE: the devices to set up (ids and secrets from provisioning)');
  const { mqttUrl } = addresses(opts);
  const duration = durationOf(opts);
  const httpPort = port(opts.softapHttpPort, 'softap-http-port');
  const tcpPort = port(opts.softapTcpPort, 'softap-tcp-port');
  const platformId = opts.platformId === undefined ? undefined : positive(opts.platformId, 'platform-id', 1, 65_535);
  const { readIdentities } = await import('../../sim/simulator.js');
  const { readNetworks, startListening } = await import('../../sim/listening.js');
  let identities = readIdentities(opts.credentials);
  if (opts.count) identities = identities.slice(0, positive(opts.count, 'count', 1, 1000));
  if (identities.length === 0) throw new Error(`${opts.credentials}: no device identities in the file`);
  if (identities.length > 1000) throw new Error('--listening: at most 1000 devices (two ports each); --count chooses the first ones');
  const networks = opts.wifi ? readNetworks(opts.wifi) : undefined;
  const print = (id: string, message: string) => {
    process.stdout.write(opts.json ? `${JSON.stringify({ device: id, message })}\n` : `${id}  ${message}\n`);
  };
  const run = await startListening({
    mqttUrl, identities, host: opts.softapHost ?? '127.0.0.1', httpPort, tcpPort,
    ...(networks ? { networks } : {}), ...(platformId === undefined ? {} : { platformId }),
  }, print);
  if (!opts.json) process.stderr.write(`${run.devices.length} device(s) in listening mode; Ctrl-C to stop\n`);
  await runUntilStopped(signal, duration);
  await run.close();
}

/** Provisions or reads the identities, connects them, prints the summary, runs until stopped. */
async function simulate(opts: SimOptions, signal: AbortSignal): Promise<void> {
  const { apiUrl, mqttUrl } = addresses(opts);
  // Checked before anything is provisioned or connected.
  const duration = durationOf(opts);
  const concurrency = positive(opts.concurrency, 'concurrency', 200, 10_000);
  const connectTimeoutMs = positive(opts.connectTimeout, 'connect-timeout', 30, 3600) * 1000;
  const firmwareVersion = opts.firmwareVersion === undefined ? undefined : whole(opts.firmwareVersion, 'firmware-version', 65_534);
  // The simulator brings MQTT and the device SDK: loaded when a simulation runs, not for every command.
  const { readIdentities, runSimulation } = await import('../../sim/simulator.js');
  const { parseUpdateFailures } = await import('../../sim/updates.js');
  const updateFailures = opts.failUpdates === undefined ? undefined : parseUpdateFailures(opts.failUpdates);
  let identities: Identity[];
  if (opts.credentials) {
    identities = readIdentities(opts.credentials);
    if (opts.count) identities = identities.slice(0, positive(opts.count, 'count', 1, 1_000_000));
  } else {
    const count = positive(opts.count, 'count', 0, 1_000_000);
    if (!count || !opts.product) throw new Error('give --count N and --product P, or --credentials FILE');
    const token = opts.token ?? process.env.SKYPORT_TOKEN;
    if (!token) throw new Error('an access token is needed to provision: --token or SKYPORT_TOKEN');
    const bar = progressPrinter('provisioning');
    identities = [];
    try {
      await provision(apiUrl, token, opts.product, count, identities, (n) => bar.update(n, count), signal);
    } finally {
      bar.end();
      // Also when provisioning stopped half-way: the secrets made so far are not shown again.
      // Written where only this user can read them.
      if (opts.out && identities.length > 0) {
        writeFileSync(opts.out, ['id,secret', ...identities.map((i) => `${i.id},${i.secret}`)].join('\n') + '\n', { mode: 0o600 });
        chmodSync(opts.out, 0o600); // the mode above applies only to a new file
      }
    }
  }

  const bar = progressPrinter('connecting  ');
  const result = await runSimulation(
    { mqttUrl, identities, signal, concurrency, connectTimeoutMs, firmwareVersion, updatesEnabled: !opts.updatesDisabled, updateFailures },
    { onProgress: (p: SimulationProgress) => bar.update(p.connected + p.failed, p.total, p.failed ? ` (${p.failed} failed)` : '') },
  );
  bar.end();
  const summary = {
    total: result.total, connected: result.connected, failed: result.failed, skipped: result.skipped,
    connect_rate_per_s: result.connectRate, elapsed_ms: result.elapsedMs, errors: result.errors,
  };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } else {
    const rows: Array<[string, string]> = [
      ['connected', `${result.connected} of ${result.total}`],
      ['failed', String(result.failed)],
      ...(result.skipped ? [['skipped', String(result.skipped)] as [string, string]] : []),
      ['connect rate', `${result.connectRate}/s`],
      ['elapsed', `${(result.elapsedMs / 1000).toFixed(1)} s`],
    ];
    process.stdout.write(rows.map(([k, v]) => `${k.padEnd(14)}${v}\n`).join(''));
    for (const e of result.errors) process.stdout.write(`  ${e}\n`);
  }

  // With no device connected there is nothing to keep running.
  if (!signal.aborted && result.devices.length > 0) {
    if (duration === undefined && !opts.json) process.stderr.write('running; Ctrl-C to stop\n');
    await runUntilStopped(signal, duration);
  }
  await Promise.all(result.devices.map((d) => d.close().catch(() => undefined)));
  // What became of the firmware updates offered while it ran (docs/sdk.md, "Firmware updates").
  const u = result.updates;
  if (u.offered > 0) {
    const firmware = { offered: u.offered, applied: u.applied, refused: u.refused, check_failed: u.checkFailed, vanished: u.vanished, reverted: u.reverted };
    process.stdout.write(opts.json ? `${JSON.stringify({ firmware })}\n` : `${'firmware'.padEnd(14)}${Object.entries(firmware).map(([k, v]) => `${v} ${k.replace('_', ' ')}`).join(', ')}\n`);
  }
  if (result.failed > 0) process.exitCode = 1;
}
