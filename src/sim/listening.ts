import { readFileSync } from 'node:fs';
import { parseNetworks, type Device, type Listening, type SetupProgress, type WifiNetwork } from '../sdk/index.js';
import { simulatedDevice, type Identity } from './simulator.js';

export interface ListeningOptions {
  mqttUrl: string;
  identities: Identity[];
  /** Address of every device's setup servers (default 127.0.0.1). */
  host?: string;
  /** First HTTP port: device i listens on httpPort + i; 0 takes free ports. */
  httpPort?: number;
  /** First TCP port, the same way. */
  tcpPort?: number;
  networks?: WifiNetwork[];
  platformId?: number;
  systemFirmwareVersion?: string;
}

export interface ListeningRun {
  devices: Device[];
  sessions: Listening[];
  close(): Promise<void>;
}

/** The highest port number. */
const MAX_PORT = 65_535;

/**
 * Puts simulated devices into listening mode, each on its own setup ports, for `skyport sim
 * --listening`: an app (or softap-setup, or a web page) sets each one up as it would hardware.
 * `onLine` gets each device's addresses once, then each step of its setup.
 */
export async function startListening(options: ListeningOptions, onLine: (id: string, line: string) => void): Promise<ListeningRun> {
  const n = options.identities.length;
  const http = options.httpPort ?? 0;
  const tcp = options.tcpPort ?? 0;
  for (const [name, first] of [['softap-http-port', http], ['softap-tcp-port', tcp]] as const) {
    if (first !== 0 && first + n - 1 > MAX_PORT) throw new Error(`--${name}: ${n} devices from port ${first} go past ${MAX_PORT}`);
  }
  if (http !== 0 && tcp !== 0 && http < tcp + n && tcp < http + n) {
    throw new Error(`--softap-http-port and --softap-tcp-port: the ranges ${http}-${http + n - 1} and ${tcp}-${tcp + n - 1} overlap`);
  }
  const devices: Device[] = [];
  const sessions: Listening[] = [];
  const close = async () => { await Promise.all(devices.map((d) => d.close().catch(() => undefined))); };
  try {
    for (const [i, who] of options.identities.entries()) {
      const device = await simulatedDevice({
        url: options.mqttUrl, id: who.id, secret: who.secret,
        systemFirmwareVersion: options.systemFirmwareVersion ?? '5.8.0',
        ...(options.platformId === undefined ? {} : { platformId: options.platformId }),
      });
      devices.push(device);
      const setup = await device.listen({
        host: options.host ?? '127.0.0.1',
        httpPort: http === 0 ? 0 : http + i,
        tcpPort: tcp === 0 ? 0 : tcp + i,
        ...(options.networks ? { networks: options.networks } : {}),
      });
      sessions.push(setup);
      onLine(device.id, `listening  http ${setup.http.url}  tcp ${setup.tcp.host}:${setup.tcp.port}`);
      setup.on('progress', (p: SetupProgress) => { if (p.step !== 'listening') onLine(device.id, p.message); });
      // Reported on the device's own line; the run goes on for the others.
      setup.done.catch((err: Error) => onLine(device.id, `setup failed: ${err.message}`));
      // A device that cannot reach the cloud says so on every retry: once per different reason here.
      let last = '';
      device.on('error', (err: Error) => {
        if (err.message !== last) onLine(device.id, err.message);
        last = err.message;
      });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { devices, sessions, close };
}

/** The networks of `--wifi FILE`: a JSON list of {ssid, password, security, channel, rssi}. */
export function readNetworks(file: string): WifiNetwork[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  return parseNetworks(parsed, file);
}
