// The fleet benchmark: a product with a large fleet and many customers. Listing a page of the
// fleet (product token), a customer's GET /v1/devices, and GET /v1/devices/:id with a customer
// token, at 1,000 and at 100,000 devices, beside a bare node:http server in the same run.
//   npm run build && npx tsx bench/fleet.ts [--store embedded|postgres] [--duration 6] [--sizes 1000,100000]
//     [--only fleet|list|one]
import { randomBytes, randomUUID } from 'node:crypto';
import { load, startBare, table, type Result } from './lib.js';
import { DEFAULT_ADMIN_URL, ROOT, api, option, runBenchmark, startSkyport, stopChild, type Store } from './harness.js';
import { openEmbedded } from '../src/storage/embedded.js';
import { openPostgres } from '../src/storage/postgres.js';
import type { Db } from '../src/storage/db.js';

const args = process.argv.slice(2);
const store = (option(args, 'store') ?? 'embedded') as Store;
if (store !== 'embedded' && store !== 'postgres') throw new Error('--store: embedded or postgres');
const seconds = Number(option(args, 'duration') ?? '6');
const sizes = (option(args, 'sizes') ?? '1000,100000').split(',').map(Number);
// --only fleet|list|one runs one scenario (beside the baseline), e.g. to profile it alone.
const only = option(args, 'only') ?? '';
const wanted = (key: string): boolean => !only || only === key;

/** Adds devices (and customers, one per 10 devices, each owning one device) straight into storage. */
async function seed(db: Db, productId: number, from: number, to: number): Promise<void> {
  const now = new Date();
  for (let i = from; i < to; i += 1000) {
    const n = Math.min(1000, to - i);
    const devices: unknown[] = [];
    const customers: unknown[] = [];
    const dv: string[] = [];
    const cv: string[] = [];
    for (let k = 0; k < n; k++) {
      const idx = i + k;
      const owner = idx % 10 === 0 ? randomUUID() : null;
      if (owner) {
        cv.push(`($${customers.length + 1}, $${customers.length + 2}, $${customers.length + 3}, NULL, $${customers.length + 4}, $${customers.length + 4})`);
        customers.push(owner, productId, `c${idx}@fleet.example`, now);
      }
      const b = devices.length;
      dv.push(`($${b + 1}, 'x', $${b + 2}, 26, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 6})`);
      devices.push(randomBytes(12).toString('hex'), `dev${idx}`, productId, owner ? 'customer' : null, owner, now);
    }
    if (cv.length) await db.query(`INSERT INTO customers (id, product_id, email, password_hash, created_at, updated_at) VALUES ${cv.join(', ')}`, customers);
    await db.query(`INSERT INTO devices (id, secret_hash, name, platform_id, product_id, owner_kind, owner_id, created_at, updated_at) VALUES ${dv.join(', ')}`, devices);
  }
  await db.query('UPDATE products SET device_count = (SELECT count(*) FROM devices WHERE product_id = $1) WHERE id = $1', [productId]);
  await db.query('ANALYZE');
}

async function main(): Promise<void> {
  const bare = await startBare();
  // Compiled, as npm start runs it (bench:fleet builds first), on a fresh store removed at the end.
  let sky = await startSkyport(store, { adminUrl: DEFAULT_ADMIN_URL, build: ROOT });
  const openStore = () => (sky.databaseUrl ? openPostgres(sky.databaseUrl) : openEmbedded(sky.dataDir));

  // Account, product, and a two-legged product client, through the API.
  const username = `fleet-${Date.now()}@example.com`;
  await api(`${sky.url}/v1/users`, { json: { username, password: 'fleet password' } });
  const login = await api<{ access_token: string }>(`${sky.url}/oauth/token`, { form: { grant_type: 'password', username, password: 'fleet password' }, basic: ['particle-api', 'particle-api'] });
  const product = (await api<{ product: { id: number } }>(`${sky.url}/v1/user/products`, { token: login.access_token, json: { product: { name: 'Big fleet', platform_id: 26 } } })).product;
  const client = (await api<{ client: { id: string; secret: string } }>(`${sky.url}/v1/products/${product.id}/clients`, { token: login.access_token, json: { name: 'backend' } })).client;

  const out: string[] = [];
  let seeded = 0;
  for (const size of sizes) {
    await stopChild(sky.child); // the embedded store has one writer: seed while the server is down
    const db = await openStore();
    await seed(db, product.id, seeded, size);
    await db.close();
    seeded = size;
    sky = await startSkyport(store, { reuse: sky, build: ROOT });
    const productToken = (await api<{ access_token: string }>(`${sky.url}/oauth/token`, { form: { grant_type: 'client_credentials', expires_in: '0' }, basic: [client.id, client.secret] })).access_token;
    const customerEmail = `c${Math.floor(size / 2 / 10) * 10}@fleet.example`;
    const customerToken = (await api<{ access_token: string }>(`${sky.url}/oauth/token`, { form: { grant_type: 'client_credentials', scope: `customer=${customerEmail}`, expires_in: '0' }, basic: [client.id, client.secret] })).access_token;
    const owned = await api<Array<{ id: string }>>(`${sky.url}/v1/devices`, { token: customerToken });
    const deviceId = owned[0]?.id;
    if (!deviceId) throw new Error('seeded customer owns no device');

    const results: Result[] = [];
    results.push(await load('bare node:http (baseline)', { url: bare }, seconds));
    if (wanted('fleet')) results.push(await load('fleet page (25 devices, product token)', { url: `${sky.url}/v1/products/${product.id}/devices?page=3`, headers: { authorization: `Bearer ${productToken}` } }, seconds));
    if (wanted('list')) results.push(await load("customer's GET /v1/devices", { url: `${sky.url}/v1/devices`, headers: { authorization: `Bearer ${customerToken}` } }, seconds));
    if (wanted('one')) results.push(await load('GET /v1/devices/:id (customer token)', { url: `${sky.url}/v1/devices/${deviceId}`, headers: { authorization: `Bearer ${customerToken}` } }, seconds));
    out.push(`\n### ${size.toLocaleString('en')} devices, ${(size / 10).toLocaleString('en')} customers (store: ${store}, ${seconds} s per scenario)\n\n${table(results, results[0]?.rps ?? 1)}`);
    console.log(out.at(-1));
  }
}

runBenchmark('bench:fleet', 60 * 60, main);
