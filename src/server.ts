import type { Settings } from './config/settings.js';
import { createSkyport, openStorage, type ListenAddresses, type Skyport } from './main.js';
import type { Db } from './storage/db.js';
import { GatewayPortInUseError } from './gateway/listeners.js';
import { checkPorts, PortInUseError } from './platform/ports.js';

/**
 * Starts the cloud: storage, the HTTP API and the device gateway. `opening`: the store the
 * settings name, already being opened (the command line opens the embedded store while it loads
 * this module); it is migrated here as openStorage would.
 */
export async function startServer(settings: Settings, opening?: Promise<Db>): Promise<{ skyport: Skyport } & ListenAddresses> {
  // A caller that began opening the store looked at the ports before it did.
  if (!opening) await checkPorts(settings);
  const skyport = await createSkyport(settings, opening ? { db: await openStorage(settings, opening) } : {});
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
