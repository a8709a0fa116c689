import { SECURITY_BY_NAME, SECURITY_NAMES, type SecurityName } from './security.js';

/** A Wi-Fi network around the simulated device. */
export interface WifiNetwork {
  ssid: string;
  /** Needed for every kind but `open`. */
  password?: string;
  security: SecurityName;
  channel: number;
  /** Signal in dBm (-100 to 0). */
  rssi: number;
}

/** The networks a simulated device sees when it is told of none (docs/sdk.md, "Listening mode"). */
export const DEFAULT_NETWORKS: readonly WifiNetwork[] = Object.freeze([
  { ssid: 'skyport-lab', password: 'skyport-lab-password', security: 'wpa2', channel: 6, rssi: -48 },
  { ssid: 'skyport-guest', security: 'open', channel: 11, rssi: -67 },
]);

/** A scan result as `scan-ap` lists it. */
export interface ScanEntry { ssid: string; rssi: number; sec: number; ch: number; mdr: number }

/** 802.11n's top rate on one stream, in kbit/s, as the firmware reports most access points. */
const MAX_DATA_RATE = 72_200;

/** `scan-ap`'s list: strongest first, networks without a name left out as the firmware does. */
export function scanList(networks: readonly WifiNetwork[]): ScanEntry[] {
  return networks
    .filter((n) => n.ssid !== '')
    .map((n) => ({ ssid: n.ssid, rssi: n.rssi, sec: SECURITY_BY_NAME[n.security], ch: n.channel, mdr: MAX_DATA_RATE }))
    .sort((a, b) => b.rssi - a.rssi);
}

/** How joining a network with the credentials an app configured went. */
export type JoinOutcome = { ok: true } | { ok: false; reason: string };

export function join(networks: readonly WifiNetwork[], ssid: string, password: string | undefined): JoinOutcome {
  const network = networks.find((n) => n.ssid === ssid);
  if (!network) return { ok: false, reason: `no network named "${ssid}" is in range` };
  if (network.security === 'open') return { ok: true };
  // Compared as a network would: the passphrase is right or it is not. Never echoed.
  if (password === undefined || password !== network.password) return { ok: false, reason: `"${ssid}" refused the password` };
  return { ok: true };
}

/**
 * Checks a list of networks (an option or the JSON file of `skyport sim --wifi`), with a message
 * that names the entry and the field at fault.
 */
export function parseNetworks(input: unknown, source = 'networks'): WifiNetwork[] {
  if (!Array.isArray(input)) throw new Error(`${source}: a JSON list of networks is expected`);
  if (input.length > 64) throw new Error(`${source}: at most 64 networks`);
  return input.map((raw, i) => {
    const at = `${source}[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${at}: an object is expected`);
    const n = raw as Record<string, unknown>;
    if (typeof n.ssid !== 'string' || Buffer.byteLength(n.ssid) > 32) throw new Error(`${at}.ssid: a text of at most 32 bytes is expected`);
    const security = n.security ?? (n.password === undefined ? 'open' : 'wpa2');
    if (typeof security !== 'string' || !SECURITY_NAMES.includes(security as SecurityName)) {
      throw new Error(`${at}.security: one of ${SECURITY_NAMES.join(', ')}`);
    }
    if (security !== 'open' && (typeof n.password !== 'string' || n.password.length === 0 || n.password.length > 64)) {
      throw new Error(`${at}.password: a ${security} network needs a password of 1 to 64 characters`);
    }
    const channel = n.channel ?? 6;
    if (!Number.isInteger(channel) || (channel as number) < 1 || (channel as number) > 165) throw new Error(`${at}.channel: a whole number from 1 to 165`);
    const rssi = n.rssi ?? -60;
    if (!Number.isInteger(rssi) || (rssi as number) < -100 || (rssi as number) > 0) throw new Error(`${at}.rssi: a whole number of dBm from -100 to 0`);
    return {
      ssid: n.ssid, security: security as SecurityName, channel: channel as number, rssi: rssi as number,
      ...(security === 'open' ? {} : { password: n.password as string }),
    };
  });
}
