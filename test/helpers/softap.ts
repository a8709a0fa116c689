import { createRequire } from 'node:module';
import { connect } from 'node:net';

/**
 * Particle's own device-setup client (npm `softap-setup` 4.1.0), as a phone app or a setup
 * script uses it, with its node-style callbacks made promises. Its `connect` and `set` may call
 * back twice on an error (once with it, once without): the first call settles.
 */
interface SoftAPClient {
  deviceInfo(cb: Callback<{ id: string; claimed: boolean }>): void;
  publicKey(cb: Callback<string>): void;
  setClaimCode(code: string, cb: Callback<unknown>): void;
  scan(cb: Callback<Array<{ ssid: string; rssi: number; sec: number; ch: number; mdr: number }>>): void;
  configure(options: { ssid: string; security: string | number; password?: string; channel?: number }, cb: Callback<{ r: number }>): void;
  connect(cb: Callback<unknown>): void;
  version(cb: Callback<{ v: number }>): void;
}
type Callback<T> = (err: Error | null | undefined, value?: T) => void;

const SoftAPSetup = createRequire(import.meta.url)('softap-setup') as new (options: { host: string; port: number; protocol: 'tcp' | 'http'; timeout?: number }) => SoftAPClient;

const promised = <T>(call: (cb: Callback<T>) => void): Promise<T> => new Promise((resolve, reject) => {
  let settled = false;
  call((err, value) => {
    if (settled) return;
    settled = true;
    if (err) reject(err);
    else resolve(value as T);
  });
});

export function softap(host: string, port: number, protocol: 'tcp' | 'http') {
  const c = new SoftAPSetup({ host, port, protocol, timeout: 5000 });
  return {
    deviceInfo: () => promised<{ id: string; claimed: boolean }>((cb) => c.deviceInfo(cb)),
    publicKey: () => promised<string>((cb) => c.publicKey(cb)),
    setClaimCode: (code: string) => promised<unknown>((cb) => c.setClaimCode(code, cb)),
    scan: () => promised<Array<{ ssid: string; rssi: number; sec: number; ch: number; mdr: number }>>((cb) => c.scan(cb)),
    configure: (o: { ssid: string; security: string | number; password?: string; channel?: number }) => promised<{ r: number }>((cb) => c.configure(o, cb)),
    connect: () => promised<unknown>((cb) => c.connect(cb)),
    version: () => promised<{ v: number }>((cb) => c.version(cb)),
  };
}

/** One raw exchange with the TCP setup server: what is sent, as bytes, and all the device answered before closing. */
export function tcpExchange(host: string, port: number, request: string | Buffer, options: { halfClose?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let data = '';
    socket.setTimeout(5000, () => { socket.destroy(); reject(new Error('the device did not answer in 5 s')); });
    socket.on('connect', () => {
      if (options.halfClose) socket.end(request);
      else socket.write(request);
    });
    socket.on('data', (chunk) => { data += chunk.toString('utf8'); });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
  });
}
