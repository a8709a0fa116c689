// The baseline's "cloud" for bench/config-fanout.ts: one raw connection to the local Mosquitto
// that does, with no storage and no logic beyond a hash comparison, what Skyport's configuration
// delivery does on the wire: publishes {id, module, value, hash} on <prefix>/<id>/cloud/config/set,
// answers a device's <prefix>/<id>/config/hello with each module whose hash differs, and counts
// the {id, status: 0} that come back on <prefix>/<id>/config/ack.
import { createHash, randomBytes } from 'node:crypto';
import { openRaw, type RawConnection } from './raw-mqtt.js';

type Json = Record<string, unknown>;
const hashOf = (value: Json) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

export interface BaselineCloud {
  /** The fleet's value of a module, sent on a push and to a device that reports another hash. */
  setFleet(module: string, value: Json): void;
  /** One config/set of `module` to each device, all published at once. */
  push(ids: string[], module: string): void;
  /** Resolves once `n` acknowledgements with status 0 arrived since the last call, with when the last did. */
  acks(n: number, timeoutMs: number): Promise<{ lastAt: number }>;
  close(): Promise<void>;
}

export async function startBaselineCloud(host: string, port: number, prefix: string): Promise<BaselineCloud> {
  const fleet = new Map<string, { value: Json; hash: string }>();
  const sent = new Set<string>();
  let acked = 0;
  let lastAt = 0;
  let waiter: { n: number; resolve(): void } | null = null;
  // Set once connected; hellos and acknowledgements only arrive after that.
  const link: { conn?: RawConnection } = {};

  const publishSet = (deviceId: string, module: string) => {
    const m = fleet.get(module) as { value: Json; hash: string };
    const id = randomBytes(6).toString('base64url');
    sent.add(id);
    link.conn?.publish(`${prefix}/${deviceId}/cloud/config/set`, JSON.stringify({ id, module, value: m.value, hash: m.hash }));
  };

  const onPublish = (topic: string, payload: Buffer) => {
    const [, deviceId, , kind] = topic.split('/') as [string, string, string, string];
    const body = JSON.parse(payload.toString('utf8')) as { id?: string; status?: number; modules?: Record<string, string> };
    if (kind === 'hello') {
      for (const [module, m] of fleet) if (body.modules?.[module] !== m.hash) publishSet(deviceId, module);
    } else if (kind === 'ack' && body.status === 0 && body.id && sent.delete(body.id)) {
      acked++;
      lastAt = Date.now();
      if (waiter && acked >= waiter.n) waiter.resolve();
    }
  };

  const { code, connection } = await openRaw({ host, port, clientId: `${prefix}-cloud`, onPublish, onLost: () => console.error('baseline cloud: the connection to Mosquitto was lost') });
  if (!connection) throw new Error(`Mosquitto at ${host}:${port} refused the baseline's connection (code ${code})`);
  link.conn = connection;
  await connection.subscribe([`${prefix}/+/config/ack`, `${prefix}/+/config/hello`]);

  return {
    setFleet: (module, value) => { fleet.set(module, { value, hash: hashOf(value) }); },
    push: (ids, module) => { for (const id of ids) publishSet(id, module); },
    acks: (n, timeoutMs) => new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        waiter = null;
        acked = 0;
        resolve({ lastAt });
      };
      const timer = setTimeout(() => {
        waiter = null;
        reject(new Error(`baseline: ${acked} of ${n} acknowledgements within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      waiter = { n, resolve: finish };
      if (acked >= n) finish();
    }),
    close: () => connection.end(),
  };
}
