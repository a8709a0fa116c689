import { createServer } from 'node:net';

/**
 * A free TCP port on loopback, for a server a test starts (Skyport, nats-server, PostgreSQL, a
 * proxy): 1883 and 4222 are taken by the machine's own services.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
