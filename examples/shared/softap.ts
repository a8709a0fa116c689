/**
 * A typed, promise-based face of `softap-setup` 4.1.0, Particle's own client of the device-setup
 * protocol ("SoftAP": the device's access point, 192.168.0.1, TCP port 5609 or HTTP port 80).
 *
 * The library's callbacks cannot be awaited as they are:
 * - `connect` and `set` (so `setClaimCode`) call back twice on an error: once with it, then once
 *   without; HTTP calls back a second time when a timed-out request then fails;
 * - `publicKey` goes on after calling back with an error and throws reading the missing key, and
 *   `deviceInfo` and `scan` throw on an empty answer; they throw inside a socket's event handler,
 *   where nothing can catch them and the process would end;
 * - `configure` answers whatever the device said, `{"r":-1}` included, as a success;
 * - `configure`, `setClaimCode` and the constructor throw at once on bad arguments;
 * - it frames a body with its length in characters, not bytes (TCP's length line, HTTP's
 *   Content-Length): a network name with non-ASCII characters does not arrive whole, so
 *   `configure` refuses one here, with that reason, rather than let the device answer "not JSON"
 *   (TCP) or hang up (HTTP). The password is sent encrypted, as hex: any text works.
 * So each command here settles once, the device's answer is checked before the library sees it
 * (an empty answer or `r` other than 0 becomes an error with the device's reason), and a throw of
 * the library's answer handler fails the command under way instead of the process.
 */
import SoftAPSetup from 'softap-setup';

export type SetupProtocol = 'tcp' | 'http';

/** Where the phone reaches a device in listening mode. */
export interface SetupAddress {
  protocol: SetupProtocol;
  host: string;
  port: number;
}

export type ScannedNetwork = SoftAPSetup.ScannedNetwork;

/** A setup command that failed: not sent, not answered, or refused by the device. */
export class SoftApError extends Error {
  constructor(readonly command: string, message: string, options?: { cause?: unknown }) {
    super(`${command}: ${message}`, options);
    this.name = 'SoftApError';
  }
}

type Answer = Record<string, unknown>;
type ProtocolCallback = (err: Error | null | undefined, answer?: unknown) => void;
/** The one method of the library's protocol classes every command goes through (not in its types). */
interface ProtocolSender {
  _sendProtocolCommand(cmd: { name: string; body?: unknown }, cb: ProtocolCallback): void;
}

export class SoftApClient {
  private readonly sap: SoftAPSetup.SoftAP;
  /** Fails the command under way; set while one is. */
  private failCurrent: ((err: Error) => void) | undefined;

  /** `timeoutMs` bounds each command (the library's own timer). */
  constructor(readonly address: SetupAddress, timeoutMs = 5000) {
    this.sap = new SoftAPSetup({ protocol: address.protocol, host: address.host, port: address.port, timeout: timeoutMs });
    const sender = this.sap as unknown as ProtocolSender;
    const send = sender._sendProtocolCommand.bind(sender);
    sender._sendProtocolCommand = (cmd, libraryCallback) => send(cmd, (err, answer) => {
      const problem = err ? new SoftApError(cmd.name, err.message, { cause: err }) : refusal(cmd.name, answer);
      try {
        if (problem) libraryCallback(problem);
        else libraryCallback(null, answer);
      } catch (thrown) {
        // The library's handler threw after (or instead of) calling back: see the top of the file.
        this.failCurrent?.(thrown instanceof Error ? new SoftApError(cmd.name, thrown.message, { cause: thrown }) : new SoftApError(cmd.name, String(thrown)));
      }
    });
  }

  /** `device-id`: the device's id (lower case, as the API spells it) and whether it says it is claimed. */
  deviceInfo(): Promise<{ id: string; claimed: boolean }> {
    return this.command('device-id', (cb) => this.sap.deviceInfo(cb));
  }

  /** `public-key`: the device's RSA public key (PEM); the library keeps it to encrypt the password. */
  publicKey(): Promise<string> {
    return this.command('public-key', (cb) => this.sap.publicKey(cb));
  }

  /** `set {"k":"cc","v":code}`: the claim code the device presents once online. */
  setClaimCode(code: string): Promise<void> {
    return this.command('set', (cb) => this.sap.setClaimCode(code, cb)).then(() => undefined);
  }

  /** `scan-ap`: the networks the device sees. */
  scan(): Promise<ScannedNetwork[]> {
    return this.command('scan-ap', (cb) => this.sap.scan(cb)).then((scans) => {
      if (!Array.isArray(scans)) throw new SoftApError('scan-ap', 'the device answered no list of networks');
      return scans;
    });
  }

  /**
   * `configure-ap`: the network to join, the password encrypted with the device's public key
   * (RSA PKCS#1 v1.5, hex). `publicKey()` must have answered first.
   */
  configure(network: { ssid: string; security: number | string; password?: string; channel: number }): Promise<void> {
    if (/[^\x00-\x7f]/.test(network.ssid)) {
      return Promise.reject(new SoftApError('configure-ap', `softap-setup 4.1.0 cannot send the network name "${network.ssid}": it counts the body's length in characters, and the name has non-ASCII ones`));
    }
    // A copy: the library writes its conversions into the object it is given.
    const options: SoftAPSetup.ConfigureOptions = { ssid: network.ssid, security: network.security, channel: network.channel };
    if (network.password !== undefined && network.password !== '') options.password = network.password;
    return this.command('configure-ap', (cb) => this.sap.configure(options, cb)).then(() => undefined);
  }

  /** `connect-ap`: the device leaves listening mode and joins the configured network. */
  connect(index = 0): Promise<void> {
    return this.command('connect-ap', (cb) => this.sap.connect(index, cb)).then(() => undefined);
  }

  /** `version`: the protocol's version (2). */
  version(): Promise<number> {
    return this.command<{ v: number }>('version', (cb) => this.sap.version(cb)).then((answer) => answer.v);
  }

  /** The library's name for a scan's security number (`wpa2_mixed`, `open`, …). */
  securityName(sec: number): string {
    return this.sap.securityLookup(sec) ?? `0x${sec.toString(16)}`;
  }

  /** Runs one library call; settles on its first callback, a throw, or a throw of its handler. */
  private command<T>(name: string, start: (cb: SoftAPSetup.Callback<T>) => void): Promise<T> {
    if (this.failCurrent) return Promise.reject(new SoftApError(name, 'another setup command is under way on this client'));
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (err: Error | null | undefined, result?: T): void => {
        if (settled) return;
        settled = true;
        this.failCurrent = undefined;
        if (err) reject(err instanceof SoftApError ? err : new SoftApError(name, err.message, { cause: err }));
        else resolve(result as T);
      };
      this.failCurrent = (err) => settle(err);
      try {
        start(settle);
      } catch (thrown) {
        settle(thrown instanceof Error ? thrown : new Error(String(thrown)));
      }
    });
  }
}

/** Why an answer is not one: none at all, or `r` other than 0 (the device's `error` says why). */
function refusal(command: string, answer: unknown): SoftApError | undefined {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
    return new SoftApError(command, 'the device closed the connection without an answer');
  }
  const { r, error } = answer as Answer;
  if (r !== undefined && r !== 0) {
    return new SoftApError(command, `refused by the device (r=${String(r)}${typeof error === 'string' ? `: ${error}` : ''})`);
  }
  return undefined;
}
