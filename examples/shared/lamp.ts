/**
 * The device of the examples: a Wi-Fi lamp made with Skyport's device SDK (docs/sdk.md). It has a
 * function `led` ("on" or "off", answers 1 or 0), a variable `led` (whether it is on) and a
 * variable `temp` (°C). In a real product this is the firmware.
 */
import { createDevice, type ClaimOutcome, type Device, type SetupProgress, type WifiNetwork } from 'skyport/device';
import type { DeviceIdentity } from './owner.js';
import type { SetupAddress, SetupProtocol } from './softap.js';

export interface Lamp {
  readonly id: string;
  /** Whether the lamp is on: what the function calls changed on the device itself. */
  readonly on: boolean;
  readonly device: Device;
  close(): Promise<void>;
}

/**
 * A lamp fresh out of the box (simple and two-legged designs): not on any network, not connected,
 * in listening mode. A phone on its access point sets it up (./setup.ts): the claim code, then the
 * home network and its password; the lamp joins, connects and presents the code.
 */
export interface ListeningLamp extends Lamp {
  /** Its setup protocol: HTTP (`url`) and TCP, as Particle's firmware serves them. */
  readonly setup: {
    readonly http: { host: string; port: number; url: string };
    readonly tcp: { host: string; port: number };
  };
  /** Where a phone on the lamp's access point reaches it (in a real home: 192.168.0.1:5609 or :80). */
  address(protocol: SetupProtocol): SetupAddress;
  /** What the lamp went through since it started listening, in order: `command`, `configured`, …, `join-failed`, `listening`, …, `joined`, `online`, `claimed`. */
  readonly progress: readonly SetupProgress[];
  /** Resolves once the lamp is online and the cloud answered its claim code: `{claimed}`, or `{claimed: false, error}`. */
  readonly done: Promise<ClaimOutcome>;
}

/**
 * The Wi-Fi around the lamp in the examples: the customer's home network (whose password the
 * customer types in the app, first with a typo) and a neighbour's.
 */
export const HOME_WIFI = { ssid: 'alice-home', password: 'correct horse battery staple', typo: 'correct horse batery staple' } as const;
export const HOME_NETWORKS: WifiNetwork[] = [
  { ssid: HOME_WIFI.ssid, password: HOME_WIFI.password, security: 'wpa2', channel: 6, rssi: -45 },
  { ssid: 'next-door', password: 'not ours to know', security: 'wpa2', channel: 11, rssi: -78 },
];

export interface ListenOptions {
  /** The Wi-Fi networks around the lamp (the SDK's own two without it). */
  networks?: WifiNetwork[];
  /** One line per step of the setup as the lamp sees it (not each command). */
  log?: (line: string) => void;
}

/** Connects a lamp with its identity; resolves once it is online and has described itself. */
export async function startLamp(mqttUrl: string, identity: DeviceIdentity): Promise<Lamp> {
  const lamp = makeLamp(mqttUrl, identity);
  await lamp.device.connect({ timeoutMs: 10_000 });
  return lamp;
}

/** Switches a new lamp on in listening mode; resolves once its setup ports answer. */
export async function startListeningLamp(mqttUrl: string, identity: DeviceIdentity, options: ListenOptions = {}): Promise<ListeningLamp> {
  const lamp = makeLamp(mqttUrl, identity);
  const progress: SetupProgress[] = [];
  const mode = await lamp.device.listen(options.networks ? { networks: options.networks } : {});
  // The first `listening` step came before this listener; the lamp says it once here.
  options.log?.(`lamp: listening: setup over HTTP at ${mode.http.url} and TCP at ${mode.tcp.host}:${mode.tcp.port}`);
  mode.on('progress', (p: SetupProgress) => {
    progress.push(p);
    if (p.step !== 'command') options.log?.(`lamp: ${p.message}`);
  });
  return {
    ...lamp,
    get on() { return lamp.on; },
    setup: { http: mode.http, tcp: mode.tcp },
    address: (protocol) => ({ protocol, host: mode[protocol].host, port: mode[protocol].port }),
    progress,
    done: mode.done,
    // The device's close() also leaves listening mode, when it is still in it.
    close: () => lamp.close(),
  };
}

function makeLamp(mqttUrl: string, identity: DeviceIdentity): Lamp {
  let on = false;
  const device = createDevice({ url: mqttUrl, id: identity.id, secret: identity.secret, reconnect: { minMs: 100, maxMs: 2000 } });
  device
    .function('led', (arg) => {
      if (arg !== 'on' && arg !== 'off') throw new Error('say "on" or "off"');
      on = arg === 'on';
      return on ? 1 : 0;
    })
    .variable('led', 'bool', () => on)
    .variable('temp', 'double', () => 21.5);
  // Network failures are reported on each retry; say each different one once.
  let last = '';
  device.on('error', (err: Error) => {
    if (err.message !== last) console.error(`lamp ${identity.id}: ${err.message}`);
    last = err.message;
  });
  return {
    id: identity.id,
    get on() { return on; },
    device,
    close: () => device.close(),
  };
}
