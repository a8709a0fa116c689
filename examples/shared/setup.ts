/**
 * Device setup as the phone does it in the simple and two-legged designs, with Particle's own
 * setup client (softap-setup, through ./softap.ts). The phone has joined the device's access point
 * (a device fresh out of the box, or held in setup mode, is in listening mode); there it:
 *
 *   device-id → public-key → set claim code → scan-ap → configure-ap → connect-ap
 *
 * The Wi-Fi password travels encrypted with the device's public key. The device then leaves
 * listening mode, joins the network, comes online and presents the claim code, which makes it the
 * customer's. The phone, back on the home network, asks the cloud (`GET /v1/devices` with the
 * customer's token) until the device is listed and online. A device that cannot join (a mistyped
 * password, most often) comes back to listening mode instead: the phone sees it answer again on
 * its setup port and says so, so that the person can type the password again.
 */
import { SoftApClient, SoftApError, type ScannedNetwork, type SetupAddress } from './softap.js';

export type { SetupAddress, SetupProtocol } from './softap.js';
export { SoftApError } from './softap.js';

/** The network the person chose in the app, and the password they typed. */
export interface WifiCredentials {
  ssid: string;
  password?: string;
}

export interface DeviceSetup {
  /** The device's setup protocol (in a real phone: 192.168.0.1, TCP 5609 or HTTP 80). */
  device: SetupAddress;
  /** From `POST /v1/products/:p/device_claims` with the customer's token. */
  claimCode: string;
  wifi: WifiCredentials;
  /** `GET /v1/devices` with the customer's token: the app's own call. */
  listDevices: () => Promise<Array<{ id: string; online: boolean }>>;
  /** How long to wait for the device to be listed online after connect-ap (ms, default 30 s). */
  onlineTimeoutMs?: number;
  /** Between two looks at the cloud and at the device (ms, default 250). */
  pollMs?: number;
  /** One line per step. */
  log?: (line: string) => void;
}

/** The device could not join the network and is back in listening mode: try again. */
export class WifiJoinFailed extends Error {
  constructor(readonly deviceId: string, readonly ssid: string) {
    super(`device ${deviceId} could not join "${ssid}" and is back in listening mode: check the Wi-Fi password and try again`);
    this.name = 'WifiJoinFailed';
  }
}

/** The device does not see the network the person chose. */
export class NetworkNotFound extends Error {
  constructor(readonly ssid: string, readonly seen: string[]) {
    super(`the device sees no network "${ssid}" (it sees: ${seen.map((s) => `"${s}"`).join(', ') || 'none'})`);
    this.name = 'NetworkNotFound';
  }
}

/** The device left listening mode but was not listed online among the customer's devices in time. */
export class SetupTimeout extends Error {
  constructor(readonly deviceId: string, seconds: number) {
    super(`device ${deviceId} was not online among your devices ${seconds} s after it was sent the Wi-Fi settings: ` +
      'it may not reach the cloud from that network, or its claim code was refused (expired, used, or the device is someone else\'s)');
    this.name = 'SetupTimeout';
  }
}

/** Sets the device up; resolves to its id once the customer's device list shows it online. */
export async function setUpDevice(setup: DeviceSetup): Promise<{ deviceId: string; network: ScannedNetwork }> {
  const log = setup.log ?? (() => undefined);
  const device = new SoftApClient(setup.device);
  const { id } = await device.deviceInfo();
  log(`phone: device ${id} is in listening mode (${setup.device.protocol} ${setup.device.host}:${setup.device.port})`);
  await device.publicKey();
  await device.setClaimCode(setup.claimCode);
  const scans = await device.scan();
  const network = scans.find((s) => s.ssid === setup.wifi.ssid);
  if (!network) throw new NetworkNotFound(setup.wifi.ssid, scans.map((s) => s.ssid));
  await device.configure({ ssid: network.ssid, security: network.sec, channel: network.ch, ...(setup.wifi.password !== undefined ? { password: setup.wifi.password } : {}) });
  await device.connect();
  log(`phone: sent the claim code and the settings of "${network.ssid}" (${device.securityName(network.sec)}, password encrypted with the device's key)`);

  const stop = new AbortController();
  try {
    await Promise.race([
      waitOnline(id, setup, stop.signal),
      waitBackInListeningMode(id, setup, stop.signal),
    ]);
  } finally {
    stop.abort();
  }
  log(`phone: device ${id} is online and among the customer's devices`);
  return { deviceId: id, network };
}

/** Resolves once `GET /v1/devices` lists the device online; rejects with SetupTimeout. */
async function waitOnline(id: string, setup: DeviceSetup, signal: AbortSignal): Promise<void> {
  const timeoutMs = setup.onlineTimeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  while (!signal.aborted) {
    const devices = await setup.listDevices();
    if (devices.some((d) => d.id === id && d.online)) return;
    if (Date.now() >= deadline) throw new SetupTimeout(id, Math.round(timeoutMs / 1000));
    await pause(setup.pollMs ?? 250, signal);
  }
}

/**
 * Rejects with WifiJoinFailed once the device answers `device-id` on its setup port again; never
 * resolves. A device closes its setup servers as soon as it has answered `connect-ap`, so an
 * answer after that is the device back in listening mode. Failures to reach it are what is
 * expected while it is away (joining, then online).
 */
async function waitBackInListeningMode(id: string, setup: DeviceSetup, signal: AbortSignal): Promise<never> {
  for (;;) {
    await pause(setup.pollMs ?? 250, signal);
    if (signal.aborted) return new Promise<never>(() => undefined);
    const answer = await new SoftApClient(setup.device, 1000).deviceInfo().catch((err: unknown) => {
      if (err instanceof SoftApError) return undefined;
      throw err;
    });
    if (answer?.id === id) throw new WifiJoinFailed(id, setup.wifi.ssid);
  }
}

/** Waits `ms`, or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(stop, ms);
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** How one setup attempt ended: the device came online as the customer's, or went back to listening mode. */
export type SetupOutcome = 'online' | 'wifi-join-failed';

/**
 * A person at the app's Wi-Fi screen: each password typed is tried in turn (`attempt` runs the
 * whole setup with it) until the device is online; a device back in listening mode means "type it
 * again". Any other failure ends the setup.
 */
export async function setUpTypingPasswords(typed: string[], attempt: (password: string) => Promise<string>, log: (line: string) => void = () => undefined): Promise<{ deviceId: string; outcomes: SetupOutcome[] }> {
  const outcomes: SetupOutcome[] = [];
  for (const password of typed) {
    try {
      const deviceId = await attempt(password);
      outcomes.push('online');
      return { deviceId, outcomes };
    } catch (err) {
      if (!(err instanceof WifiJoinFailed)) throw err;
      outcomes.push('wifi-join-failed');
      log(`phone: ${err.message}`);
    }
  }
  throw new Error(`the device is still not set up after ${typed.length} passwords`);
}
