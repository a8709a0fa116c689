import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { createServer as createHttpServer } from 'node:http';
import type { Gateway } from './gateway.js';
import { clientAddress, proxyTrust, unmapped } from '../platform/proxies.js';

export interface GatewayListenOptions {
  host: string;
  port: number;
  tls?: { certFile: string; keyFile: string } | undefined;
  wsPort?: number | undefined;
  /** TRUST_PROXY: the proxies whose X-Forwarded-For names a WebSocket client's address. */
  trustProxy: readonly string[];
}

export class GatewayPortInUseError extends Error {
  constructor(readonly setting: 'MQTT_PORT' | 'MQTT_WS_PORT', readonly port: number) {
    super(`port ${port} is already in use; set ${setting} (or --${setting.toLowerCase().replace(/_/g, '-')}) to a free port`);
    this.name = 'GatewayPortInUseError';
  }
}

function listen(server: Server | ReturnType<typeof createHttpServer>, port: number, host: string, setting: 'MQTT_PORT' | 'MQTT_WS_PORT'): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new GatewayPortInUseError(setting, port) : err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const peer = (address: string | undefined) => unmapped(address ?? 'unknown');

/**
 * The transports of the device gateway (docs/device-protocol.md, "Connecting"): MQTT over TCP,
 * or over TLS when a certificate and key are configured, and optionally over WebSocket.
 */
export async function listenGateway(gateway: Gateway, options: GatewayListenOptions): Promise<{ mqttPort: number; wsPort: number | undefined; close(): Promise<void> }> {
  const closers: Array<() => Promise<void>> = [];
  const onSocket = (socket: import('node:net').Socket) => {
    socket.setNoDelay(true);
    gateway.accept(socket, peer(socket.remoteAddress));
  };
  const server = options.tls
    ? createTlsServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, onSocket)
    : createTcpServer(onSocket);
  const mqttPort = await listen(server, options.port, options.host, 'MQTT_PORT');
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));

  let wsPort: number | undefined;
  if (options.wsPort !== undefined) {
    // Loaded only for a gateway that opens the WebSocket port (MQTT_WS_PORT): a start spares it otherwise.
    const { WebSocketServer, createWebSocketStream } = await import('ws');
    const http = createHttpServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'upgrade_required', error_description: 'Connect with MQTT over WebSocket on /mqtt' }));
    });
    const wss = new WebSocketServer({ server: http, path: '/mqtt', maxPayload: 64 * 1024, handleProtocols: (protocols) => (protocols.has('mqtt') ? 'mqtt' : false) });
    // The device's address, which its connect failures count under, by the HTTP API's rule: the
    // right-most address of X-Forwarded-For not of a proxy TRUST_PROXY names (platform/proxies.ts).
    const trusted = proxyTrust(options.trustProxy);
    wss.on('connection', (ws, req) => {
      gateway.accept(createWebSocketStream(ws), clientAddress(peer(req.socket.remoteAddress), req.headers['x-forwarded-for'], trusted));
    });
    try {
      wsPort = await listen(http, options.wsPort, options.host, 'MQTT_WS_PORT');
    } catch (err) {
      await Promise.all(closers.map((c) => c()));
      throw err;
    }
    closers.push(() => new Promise((resolve) => { wss.close(); http.close(() => resolve()); http.closeAllConnections(); }));
  }
  return { mqttPort, wsPort, close: async () => { await Promise.all(closers.map((c) => c())); } };
}
