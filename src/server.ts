import type { Settings } from './config/settings.js';
import { createSkyport, type Skyport } from './main.js';

export class PortInUseError extends Error {
  constructor(setting: string, port: number) {
    super(`port ${port} is already in use; set ${setting} (or --${setting.toLowerCase().replace(/_/g, '-')}) to a free port`);
    this.name = 'PortInUseError';
  }
}

/** Starts the cloud: storage, the HTTP API, and (later) the device gateway. */
export async function startServer(settings: Settings): Promise<{ skyport: Skyport; url: string }> {
  const skyport = await createSkyport(settings);
  try {
    await skyport.app.listen({ host: settings.host, port: settings.port });
  } catch (err) {
    await skyport.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError('PORT', settings.port);
    throw err;
  }
  const address = skyport.app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? 'localhost' : settings.host;
  return { skyport, url: `http://${host}:${port}` };
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
