import { createServer as createTcpServer } from 'node:net';
import type { Settings } from './config/settings.js';
import { createSkyport, type ListenAddresses, type Skyport } from './main.js';
import { GatewayPortInUseError } from './gateway/listeners.js';

export class PortInUseError extends Error {
  constructor(setting: string, port: number) {
    super(`port ${port} is already in use; set ${setting} (or --${setting.toLowerCase().replace(/_/g, '-')}) to a free port`);
    this.name = 'PortInUseError';
  }
}

/** Whether `port` can be listened on at `host` now (0 always can). */
function portFree(host: string, port: number): Promise<boolean> {
  if (port === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const probe = createTcpServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'EADDRINUSE'));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/**
 * The ports the node will listen on, looked at before the store is opened: a port in use is
 * said at once, not after the seconds a new embedded data directory takes (initdb). Other errors
 * (an address that is not this machine's) are left to the real listen, which says them.
 */
async function checkPorts(settings: Settings): Promise<void> {
  const ports: Array<[string, number | undefined]> = [['PORT', settings.port]];
  if (settings.role !== 'api') ports.push(['MQTT_PORT', settings.mqttPort], ['MQTT_WS_PORT', settings.mqttWsPort]);
  for (const [setting, port] of ports) {
    if (port !== undefined && !(await portFree(settings.host, port))) throw new PortInUseError(setting, port);
  }
}

/** Starts the cloud: storage, the HTTP API and the device gateway. */
export async function startServer(settings: Settings): Promise<{ skyport: Skyport } & ListenAddresses> {
  await checkPorts(settings);
  const skyport = await createSkyport(settings);
  try {
    return { skyport, ...(await skyport.listen()) };
  } catch (err) {
    await skyport.close();
    if (err instanceof GatewayPortInUseError) throw new PortInUseError(err.setting, err.port);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError('PORT', settings.port);
    throw err;
  }
}

/**
 * How long the steps of a shutdown after its drain may take (the webhook deliveries under way
 * get 5 s, then the node's lease, NATS and the store): the drain may use all of
 * SHUTDOWN_GRACE_SECONDS, and a cut at that moment stopped the server before it stored its
 * devices offline or handed its deliveries back.
 */
export const CLOSE_ALLOWANCE_SECONDS = 15;

/**
 * Graceful shutdown on SIGTERM and SIGINT: stop accepting, let in-flight requests finish (up to
 * SHUTDOWN_GRACE_SECONDS), then close storage and exit; cut short if still under way
 * CLOSE_ALLOWANCE_SECONDS after that.
 */
export function exitOnSignals(skyport: Skyport, graceSeconds: number): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    skyport.app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      skyport.app.log.warn({ stage: skyport.shutdownStage() }, 'the shutdown did not finish in time; exiting');
      process.exit(1);
    }, (graceSeconds + CLOSE_ALLOWANCE_SECONDS) * 1000);
    force.unref();
    skyport.close().then(() => process.exit(0), (err) => {
      skyport.app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
