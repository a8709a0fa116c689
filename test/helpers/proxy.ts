import { createServer, connect, type Socket } from 'node:net';
import { freePort } from './ports.js';

/**
 * A TCP relay in front of a server (NATS, PostgreSQL), on a port of its own: `cut()` drops every
 * connection through it and refuses new ones, as a broken network would, until `restore()`. It
 * lets a test cut one node off from a server that the other nodes still reach. `stall()` holds
 * what the server sends, so that a test can have a message on its way while the client acts.
 */
export interface TestProxy {
  port: number;
  cut(): void;
  restore(): void;
  /** Holds what the server sends to its clients (their own writes still pass) until `flow()`. */
  stall(): void;
  flow(): void;
  /** Bytes held by `stall` now. */
  readonly stalled: number;
  close(): Promise<void>;
}

export async function startProxy(target: { host: string; port: number }): Promise<TestProxy> {
  const port = await freePort();
  const open = new Set<Socket>();
  let down = false;
  let stalled: Array<() => void> | null = null;
  let stalledBytes = 0;
  const server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!stalled) return void client.write(chunk);
      stalledBytes += chunk.length;
      stalled.push(() => client.write(chunk));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    cut() {
      down = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      down = false;
    },
    stall() {
      stalled ??= [];
    },
    flow() {
      const held = stalled ?? [];
      stalled = null;
      stalledBytes = 0;
      for (const write of held) write();
    },
    get stalled() {
      return stalledBytes;
    },
    async close() {
      down = true;
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
