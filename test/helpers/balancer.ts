import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TestBalancer {
  /** Where new connections may go, in turn (change it to steer them). */
  upstreams: number[];
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * A TCP load balancer in front of gateways, as HAProxy in `mode tcp` with `option redispatch`
 * would be (docs/operations.md, "Cluster mode"): each new connection goes to the next upstream
 * in turn, and to the one after it when that one refuses. Bytes are passed as they are.
 */
export async function startBalancer(upstreams: number[]): Promise<TestBalancer> {
  let next = 0;
  const open = new Set<Socket>();
  const dial = (client: Socket, tries: number) => {
    if (tries >= balancer.upstreams.length) return void client.destroy();
    const port = balancer.upstreams[next++ % balancer.upstreams.length] as number;
    const upstream = connect(port, '127.0.0.1');
    upstream.once('error', () => {
      if (!upstream.readyState.includes('open')) dial(client, tries + 1);
      else client.destroy();
    });
    upstream.once('connect', () => {
      open.add(upstream);
      upstream.on('close', () => { open.delete(upstream); client.destroy(); });
      client.on('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  };
  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    dial(client, 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const balancer: TestBalancer = {
    upstreams: [...upstreams],
    port,
    url: `mqtt://127.0.0.1:${port}`,
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return balancer;
}
