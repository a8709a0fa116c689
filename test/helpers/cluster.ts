import { spawn } from 'node:child_process';
import { freshStore, LIMITS_OFF, startTestServer, type TestServer, type TestServerOptions, type TestStore } from './server.js';
import { startNats, type TestNats } from './nats.js';
import { freePort } from './ports.js';
import { BIN } from './cli.js';
import { eventually } from './eventually.js';

export interface TestCluster {
  nats: TestNats;
  /** The store every node shares (PostgreSQL). */
  store: TestStore;
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
  // A store the test brings (a PostgreSQL of its own, to stop) is the test's to drop.
  const store = options.store ?? await freshStore();
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
    nats, store, nodes, add,
    async close() {
      await Promise.allSettled(nodes.map((n) => n.close()));
      if (!options.store) await store.drop();
      await nats.stop();
    },
  };
}

export interface NodeProcess {
  url: string;
  mqttPort: number;
  /** Kills the process (SIGKILL unless told) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A node as its own process, started as docs/operations.md says (`skyport server start`, over
 * the build in dist/), for what one process cannot show: a node killed with SIGKILL.
 */
export async function startNodeProcess(env: Record<string, string>): Promise<NodeProcess> {
  const [port, mqttPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [BIN, 'server', 'start'], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), MQTT_PORT: String(mqttPort), LOG_LEVEL: process.env.TEST_LOG ?? 'warn', ...LIMITS_OFF, ...env },
    stdio: ['ignore', 'ignore', process.env.TEST_LOG ? 'inherit' : 'ignore'],
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`the node exited with ${child.exitCode}`);
    try {
      return (await fetch(`${url}/healthz`)).status === 200 || undefined;
    } catch {
      return undefined;
    }
  }, 20_000, 'the node to answer /healthz');
  return {
    url, mqttPort,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
  };
}
