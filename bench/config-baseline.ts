// The baseline's "cloud" for bench/config-fanout.ts: with no storage and no logic beyond a hash
// comparison, what Skyport's configuration delivery does on the wire: publishes {id, module,
// value, hash} on <prefix>/<id>/cloud/config/set, answers a device's <prefix>/<id>/config/hello
// with each module whose hash differs, and counts the {id, status: 0} that come back on
// <prefix>/<id>/config/ack. Over Mosquitto it is one raw connection (`startBaselineCloud`); in
// the Node.js floor (bench/node-floor.ts) it runs inside the broker's own process.
import { createHash, randomBytes } from 'node:crypto';
import { openRaw } from './raw-mqtt.js';

type Json = Record<string, unknown>;
const hashOf = (value: Json) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

export interface BaselineCloud {
  /** The fleet's value of a module, sent on a push and to a device that reports another hash. */
  setFleet(module: string, value: Json): Promise<void> | void;
  /** One config/set of `module` to each device, all published at once. */
  push(ids: string[], module: string): Promise<void> | void;
  /** Resolves once `n` acknowledgements with status 0 arrived since the last call, with when the last did. */
  acks(n: number, timeoutMs: number): Promise<{ lastAt: number }>;
  close(): Promise<void>;
}

/** The cloud's side without its transport: `publish` sends, `onPublish` takes what devices send. */
export function baselineLogic(prefix: string, publish: (topic: string, payload: string) => void) {
  const fleet = new Map<string, { value: Json; hash: string }>();
  const sent = new Set<string>();
  let acked = 0;
  let lastAt = 0;
  let waiter: { n: number; resolve(): void } | null = null;

  const publishSet = (deviceId: string, module: string) => {
    const m = fleet.get(module) as { value: Json; hash: string };
    const id = randomBytes(6).toString('base64url');
    sent.add(id);
    publish(`${prefix}/${deviceId}/cloud/config/set`, JSON.stringify({ id, module, value: m.value, hash: m.hash }));
  };

  return {
    onPublish(topic: string, payload: Buffer): void {
      const [, deviceId, , kind] = topic.split('/') as [string, string, string, string];
      const body = JSON.parse(payload.toString('utf8')) as { id?: string; status?: number; modules?: Record<string, string> };
      if (kind === 'hello') {
        for (const [module, m] of fleet) if (body.modules?.[module] !== m.hash) publishSet(deviceId, module);
      } else if (kind === 'ack' && body.status === 0 && body.id && sent.delete(body.id)) {
        acked++;
        lastAt = Date.now();
        if (waiter && acked >= waiter.n) waiter.resolve();
      }
    },
    setFleet: (module: string, value: Json) => { fleet.set(module, { value, hash: hashOf(value) }); },
    push: (ids: string[], module: string) => { for (const id of ids) publishSet(id, module); },
    acks: (n: number, timeoutMs: number) => new Promise<{ lastAt: number }>((resolve, reject) => {
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
  };
}

export async function startBaselineCloud(host: string, port: number, prefix: string): Promise<BaselineCloud> {
  // Set once connected; hellos and acknowledgements only arrive after that.
  const link: { publish?: (topic: string, payload: string) => void } = {};
  const logic = baselineLogic(prefix, (topic, payload) => link.publish?.(topic, payload));
  const { code, connection } = await openRaw({ host, port, clientId: `${prefix}-cloud`, onPublish: logic.onPublish, onLost: () => console.error('baseline cloud: the connection to Mosquitto was lost') });
  if (!connection) throw new Error(`Mosquitto at ${host}:${port} refused the baseline's connection (code ${code})`);
  link.publish = connection.publish;
  await connection.subscribe([`${prefix}/+/config/ack`, `${prefix}/+/config/hello`]);
  return { setFleet: logic.setFleet, push: logic.push, acks: logic.acks, close: () => connection.end() };
}
