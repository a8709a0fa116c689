/**
 * The device's setup protocol over HTTP (Particle's SoftAP protocol), spoken straight from the
 * page while the person's computer is on the device's own Wi-Fi network.
 *
 * Each command is a path on the device's address. Those with an argument are POSTs whose body is
 * raw JSON sent as `application/x-www-form-urlencoded`: with that content type the browser makes a
 * "simple" cross-origin request, with no pre-flight OPTIONS, which the device would not answer.
 * The device answers JSON with `Access-Control-Allow-Origin: *`; `r` is 0 when a command worked
 * and -1 with an `error` reason when not.
 */
import { encrypt } from './rsa.js';

/** The device refused a command (`r` other than 0), or could not be reached. */
export class DeviceError extends Error {
  constructor(message, { unreachable = false } = {}) {
    super(message);
    this.name = 'DeviceError';
    this.unreachable = unreachable;
  }
}

/** Readable names of the security codes the device reports (the WICED codes of Particle's Wi-Fi firmware). */
const SECURITY = new Map([
  [0, 'open'], [0x1, 'WEP'], [0x8001, 'WEP'],
  [0x200002, 'WPA'], [0x200004, 'WPA'], [0x200006, 'WPA'],
  [0x400002, 'WPA2'], [0x400004, 'WPA2'], [0x400006, 'WPA2'],
  [0x2400002, 'WPA2 Enterprise'], [0x2400004, 'WPA2 Enterprise'], [0x2400006, 'WPA2 Enterprise'],
]);
export const securityName = (sec) => SECURITY.get(sec) ?? 'secured';

/** The device at `address` (e.g. http://192.168.0.1). */
export function deviceAt(address) {
  const base = address.replace(/\/+$/, '');

  async function command(name, body, { timeoutMs = 8000 } = {}) {
    const init = { method: 'GET', signal: AbortSignal.timeout(timeoutMs) };
    if (body !== undefined) {
      init.method = 'POST';
      init.headers = { 'content-type': 'application/x-www-form-urlencoded' };
      init.body = JSON.stringify(body);
    }
    let answer;
    try {
      const res = await fetch(`${base}/${name}`, init);
      answer = await res.json();
    } catch {
      throw new DeviceError(`The device at ${base} did not answer "${name}" (is this computer on the device's Wi-Fi, and is the device in listening mode?)`, { unreachable: true });
    }
    if (answer === null || typeof answer !== 'object') throw new DeviceError(`The device's answer to "${name}" is not understood`);
    if (answer.r !== undefined && answer.r !== 0) throw new DeviceError(`The device refused "${name}": ${answer.error ?? `code ${answer.r}`}`);
    return answer;
  }

  return {
    address: base,

    /** The device's id, lowercase as the API writes it (the device sends 24 hex digits, uppercase). */
    async deviceId(options) {
      const { id } = await command('device-id', undefined, options);
      if (typeof id !== 'string' || !/^[0-9a-fA-F]{24}$/.test(id)) throw new DeviceError('The device sent no valid id');
      return id.toLowerCase();
    },

    /** The device's RSA public key: hex of a DER SubjectPublicKeyInfo (rsa.js reads it). */
    async publicKey() {
      const { b } = await command('public-key');
      if (typeof b !== 'string') throw new DeviceError('The device sent no public key');
      return b;
    },

    /** Gives the device the claim code it presents to the cloud once online. */
    async setClaimCode(code) {
      await command('set', { k: 'cc', v: code });
    },

    /** The Wi-Fi networks the device sees: `{ssid, rssi, sec, ch}` each, strongest first. */
    async scan() {
      const { scans } = await command('scan-ap', undefined, { timeoutMs: 20000 });
      if (!Array.isArray(scans)) throw new DeviceError('The device sent no list of networks');
      return scans.filter((s) => s && typeof s.ssid === 'string').sort((a, b) => b.rssi - a.rssi);
    },

    /**
     * Stores the network's credentials (`configure-ap`), the password RSA-encrypted with the
     * device's key so that it never crosses the air in the clear; then `connect-ap`: the device
     * leaves listening mode and joins the network.
     */
    async join(publicKeyHex, network, password) {
      const ap = { idx: 0, ssid: network.ssid, sec: network.sec, ch: network.ch };
      if (password !== '') ap.pwd = encrypt(publicKeyHex, password);
      await command('configure-ap', ap);
      await command('connect-ap', { idx: 0 });
    },

    /**
     * Whether the device answers in listening mode right now, with the id `expected`: a short
     * probe, false for no answer.
     */
    async listening(expected) {
      try {
        return (await this.deviceId({ timeoutMs: 800 })) === expected;
      } catch {
        return false;
      }
    },
  };
}
