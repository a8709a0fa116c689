import { freshStore, startTestServer, type TestServer, type TestServerOptions } from './server.js';
import { startNats, type TestNats } from './nats.js';

export interface TestCluster {
  nats: TestNats;
  nodes: TestServer[];
  /** Starts one more node on the same store and NATS (`role`: all, api or gateway). */
  add(role?: 'all' | 'api' | 'gateway', options?: TestServerOptions): Promise<TestServer>;
  close(): Promise<void>;
}

/**
 * Nodes of one cluster in this process: each a whole Skyport with its own ports, NATS
 * connection, caches and gateway, on one PostgreSQL database and one nats-server started for the
 * test. Cluster tests run on PostgreSQL only (the embedded store is single-node).
 */
export async function startCluster(roles: Array<'all' | 'api' | 'gateway'>, options: TestServerOptions = {}): Promise<TestCluster> {
  const nats = await startNats();
  const store = await freshStore();
  const nodes: TestServer[] = [];
  const add = async (role: 'all' | 'api' | 'gateway' = 'all', more: TestServerOptions = {}) => {
    const node = await startTestServer({
      ...options, ...more, store,
      env: { NATS_URL: nats.url, ROLE: role, NODE_ID: `node-${nodes.length + 1}`, ...options.env, ...more.env },
    });
    nodes.push(node);
    return node;
  };
  for (const role of roles) await add(role);
  return {
    nats, nodes, add,
    async close() {
      await Promise.allSettled(nodes.map((n) => n.close()));
      await store.drop();
      await nats.stop();
    },
  };
}
