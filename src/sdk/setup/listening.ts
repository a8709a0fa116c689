import { EventEmitter, once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { runCommand, type Credentials, type SetupTarget } from './commands.js';
import { createSetupHttpServer, type CommandRunner } from './http-server.js';
import type { SetupKey } from './keys.js';
import { createSetupTcpServer } from './tcp-server.js';
import { DEFAULT_NETWORKS, join, parseNetworks, type WifiNetwork } from './wifi.js';

export interface ListenOptions {
  /** Address both setup servers listen on (default 127.0.0.1; a real device is 192.168.0.1). */
  host?: string;
  /** HTTP port (a real device: 80); 0, the default, takes any free one. */
  httpPort?: number;
  /** TCP port (a real device: 5609); 0, the default, takes any free one. */
  tcpPort?: number;
  /** The Wi-Fi networks around the device (default DEFAULT_NETWORKS). */
  networks?: readonly WifiNetwork[];
}

export type SetupStep =
  | 'listening' | 'command' | 'configured' | 'joining' | 'join-failed' | 'joined' | 'online' | 'claimed' | 'claim-failed';

/** One step of setup, for a progress line: never holds the Wi-Fi password. */
export interface SetupProgress { step: SetupStep; message: string }

/** How the device's claim code fared once online. */
export type ClaimOutcome = { claimed: true } | { claimed: false; error: string } | undefined;

/** What listening mode needs of the device it runs on. */
export interface ListeningDevice {
  readonly id: string;
  isClaimed(): boolean;
  readonly cellular: boolean;
  readonly key: SetupKey;
  setClaimCode(code: string): void;
  /** Connects to the cloud (after joining); resolves once online with its claim code, if any, settled. */
  goOnline(): Promise<ClaimOutcome>;
  /** Listening mode ended (set up or stopped). */
  left(session: Listening): void;
}

export interface Address { host: string; port: number }

/**
 * Listening mode: the device serves the setup protocol on HTTP and TCP until an app sends
 * `connect-ap`; it then leaves listening mode and joins the configured network. A failed join
 * (wrong password, no such network) brings it back to listening mode on the same ports, as the
 * firmware does when new credentials fail, so the app can try again.
 *
 * Events: 'progress' (SetupProgress), 'error' (a server failure; the device keeps serving).
 */
export class Listening extends EventEmitter {
  readonly http: Address & { url: string };
  readonly tcp: Address;
  /** Resolves once the device joined, went online and settled its claim code; rejects if it cannot connect. */
  readonly done: Promise<ClaimOutcome>;
  private credentials: Credentials | undefined;
  private servers: { http: Server; tcp: NetServer } | undefined;
  private stopped = false;
  private settle!: { resolve: (o: ClaimOutcome) => void; reject: (err: Error) => void };

  private constructor(private readonly device: ListeningDevice, private readonly networks: readonly WifiNetwork[], http: Address, tcp: Address) {
    super();
    this.on('error', () => undefined);
    this.http = { ...http, url: `http://${http.host.includes(':') ? `[${http.host}]` : http.host}:${http.port}` };
    this.tcp = tcp;
    this.done = new Promise((resolve, reject) => { this.settle = { resolve, reject }; });
    // Awaited by whoever wants it; a device that failed to connect must not end the process.
    this.done.catch(() => undefined);
  }

  /** Opens both servers; rejects when a port is taken or the address is not this machine's. */
  static async start(device: ListeningDevice, options: ListenOptions = {}): Promise<Listening> {
    const networks = options.networks ? parseNetworks(options.networks) : DEFAULT_NETWORKS;
    const host = options.host ?? '127.0.0.1';
    let run: CommandRunner = () => ({ answer: { r: -1, error: 'the device is starting' } });
    let report = (_err: Error): void => undefined;
    const servers = await openServers(host, options.httpPort ?? 0, options.tcpPort ?? 0, (name, body) => run(name, body), (err) => report(err));
    const session = new Listening(device, networks, { host, port: port(servers.http) }, { host, port: port(servers.tcp) });
    session.servers = servers;
    run = session.run;
    report = session.report;
    session.listening();
    return session;
  }

  /** Leaves listening mode without being set up (the device stays offline until told otherwise). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.settle.reject(new Error('listening mode was left before setup ended'));
    await this.closeServers();
    this.device.left(this);
  }

  get active(): boolean {
    return !this.stopped;
  }

  /** Runs a command of either transport against the device as it is now. */
  private readonly run = (name: string, body: string | undefined) => {
    const outcome = runCommand(this.target(), name, body);
    this.progress('command', `${name}: ${outcome.answer.r === -1 ? `refused (${String(outcome.answer.error)})` : 'ok'}`);
    return outcome;
  };

  private readonly report = (err: Error) => { this.emit('error', err); };

  private target(): SetupTarget {
    return {
      id: this.device.id,
      claimed: this.device.isClaimed(),
      key: this.device.key,
      networks: this.networks,
      cellular: this.device.cellular,
      configured: this.credentials !== undefined,
      setClaimCode: (code) => {
        this.device.setClaimCode(code);
        this.progress('configured', 'claim code stored');
      },
      configure: (credentials) => {
        this.credentials = credentials;
        this.progress('configured', `Wi-Fi network "${credentials.ssid}" stored`);
      },
      connect: () => void this.leave(),
    };
  }

  /** `connect-ap`: out of listening mode, onto the network, then the cloud. */
  private async leave(): Promise<void> {
    if (this.stopped || !this.servers) return;
    const addresses = { http: this.http.port, tcp: this.tcp.port };
    await this.closeServers();
    if (this.stopped) return;
    if (!this.device.cellular) {
      const ssid = this.credentials?.ssid ?? '';
      this.progress('joining', `joining "${ssid}"`);
      const joined = join(this.networks, ssid, this.credentials?.password);
      if (!joined.ok) {
        this.progress('join-failed', `could not join: ${joined.reason}; back in listening mode`);
        if (this.stopped) return;
        try {
          this.servers = await openServers(this.http.host, addresses.http, addresses.tcp, this.run, this.report);
          this.listening();
        } catch (err) {
          this.emit('error', err as Error);
          this.stopped = true;
          this.settle.reject(err as Error);
          this.device.left(this);
        }
        return;
      }
      this.progress('joined', `joined "${ssid}"`);
    }
    this.stopped = true;
    this.device.left(this);
    try {
      const claim = await this.device.goOnline();
      this.progress('online', 'connected to the cloud');
      if (claim?.claimed) this.progress('claimed', 'claimed: the cloud confirmed the claim code');
      else if (claim) this.progress('claim-failed', `the cloud refused the claim code: ${claim.error}`);
      this.settle.resolve(claim);
    } catch (err) {
      this.settle.reject(err as Error);
    }
  }

  private async closeServers(): Promise<void> {
    const servers = this.servers;
    this.servers = undefined;
    if (!servers) return;
    await Promise.all([closeServer(servers.http, true), closeServer(servers.tcp, false)]);
  }

  private listening(): void {
    this.progress('listening', `listening: setup over HTTP at ${this.http.url} and TCP at ${this.tcp.host}:${this.tcp.port}`);
  }

  private progress(step: SetupStep, message: string): void {
    this.emit('progress', { step, message } satisfies SetupProgress);
  }
}

const port = (s: Server | NetServer) => (s.address() as AddressInfo).port;

async function openServers(host: string, httpPort: number, tcpPort: number, run: CommandRunner, report: (err: Error) => void): Promise<{ http: Server; tcp: NetServer }> {
  const http = createSetupHttpServer(run, report);
  const tcp = createSetupTcpServer(run, report);
  try {
    http.listen(httpPort, host);
    await once(http, 'listening');
    tcp.listen(tcpPort, host);
    await once(tcp, 'listening');
    for (const s of [http, tcp]) s.on('error', report);
  } catch (err) {
    await Promise.all([closeServer(http, true), closeServer(tcp, false)]);
    throw new Error(`cannot listen on ${host}: ${(err as Error).message}`);
  }
  return { http, tcp };
}

function closeServer(server: Server | NetServer, http: boolean): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive connections of an HTTP client would hold the port open.
    if (http) (server as Server).closeAllConnections();
  });
}
