import type { Settings } from './config/settings.js';
import { createSkyport, type ListenAddresses, type Skyport } from './main.js';
import { GatewayPortInUseError } from './gateway/listeners.js';

export class PortInUseError extends Error {
  constructor(setting: string, port: number) {
    super(`port ${port} is already in use; set ${setting} (or --${setting.toLowerCase().replace(/_/g, '-')}) to a free port`);
    this.name = 'PortInUseError';
  }
}

/** Starts the cloud: storage, the HTTP API and the device gateway. */
export async function startServer(settings: Settings): Promise<{ skyport: Skyport } & ListenAddresses> {
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
 * Graceful shutdown on SIGTERM and SIGINT: stop accepting, let in-flight requests finish (up to
 * SHUTDOWN_GRACE_SECONDS), then close storage and exit.
 */
export function exitOnSignals(skyport: Skyport, graceSeconds: number): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    skyport.app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      skyport.app.log.warn('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, graceSeconds * 1000);
    force.unref();
    skyport.close().then(() => process.exit(0), (err) => {
      skyport.app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
