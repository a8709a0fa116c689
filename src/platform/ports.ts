import { createServer as createTcpServer } from 'node:net';
import type { Settings } from '../config/settings.js';

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
export async function checkPorts(settings: Settings): Promise<void> {
  const ports: Array<[string, number | undefined]> = [['PORT', settings.port]];
  if (settings.role !== 'api') ports.push(['MQTT_PORT', settings.mqttPort], ['MQTT_WS_PORT', settings.mqttWsPort]);
  for (const [setting, port] of ports) {
    if (port !== undefined && !(await portFree(settings.host, port))) throw new PortInUseError(setting, port);
  }
}
