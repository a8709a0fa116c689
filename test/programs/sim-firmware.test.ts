import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventually } from '../helpers/eventually.js';
import { provision, type Identity } from '../helpers/device.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { spawnSkyport } from '../helpers/cli.js';
import { firmwareBinary, testFirmware } from '../helpers/firmware.js';

/** `skyport sim` taking firmware updates: applied by the module's product version, refused on purpose, or disabled. */
const firmware = testFirmware();
let server: TestServer;
let dir: string;
before(async () => {
  server = await startTestServer({ firmware: firmware.source });
  dir = mkdtempSync(join(tmpdir(), 'skyport-sim-fw-'));
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function devices(n: number) {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const list: Identity[] = [];
  for (let i = 0; i < n; i++) list.push(await provision(server.url, token, product.id));
  const file = join(dir, `${product.id}.csv`);
  writeFileSync(file, ['id,secret', ...list.map((d) => `${d.id},${d.secret}`)].join('\n'));
  return { token, product, list, file };
}

/** Runs the simulator on `file` until every device's update is `state`; answers its output. */
async function simUntil(file: string, ids: string[], state: string, extra: string[]) {
  const p = spawnSkyport(['sim', '--credentials', file, '--mqtt-url', server.mqttUrl, '--firmware-version', '1', ...extra], {});
  try {
    await eventually(async () => {
      const states = await Promise.all(ids.map((id) => server.skyport.services.firmwareUpdates.stateOf(id)));
      return states.every((s) => s?.state === state) ? true : undefined;
    }, 20_000, `every update ${state}`);
  } finally {
    p.child.kill('SIGINT');
  }
  const code = await p.exit;
  return { code, out: p.out(), err: p.err() };
}

test('sim devices apply any image by the product version in its module suffix, and say what they did when they stop', async () => {
  const { product, list, file } = await devices(3);
  // The release is version 7, and the binary says 7 in its suffix.
  firmware.target(list.map((d) => d.id), product.id, 7, firmwareBinary(product.id, 7, { dataSize: 30_000 }));
  const run = await simUntil(file, list.map((d) => d.id), 'succeeded', ['--json']);
  assert.equal(run.code, 0, run.err);
  const lines = run.out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(lines.at(-1), { firmware: { offered: 3, applied: 3, refused: 0, check_failed: 0, vanished: 0, reverted: 0 } });
  for (const d of list) assert.equal((await server.skyport.db.query<{ v: number }>('SELECT firmware_version AS v FROM devices WHERE id = $1', [d.id]))[0]?.v, 7);
});

test('sim devices fail the share of updates they are told to, and start with updates disabled when asked', async () => {
  const { product, list, file } = await devices(2);
  firmware.target(list.map((d) => d.id), product.id, 8, firmwareBinary(product.id, 8, { dataSize: 20_000 }));
  const refused = await simUntil(file, list.map((d) => d.id), 'failed', ['--fail-updates', 'refuse=1']);
  assert.equal(refused.code, 0, refused.err);
  assert.match(refused.out, /^firmware +2 offered, 0 applied, 2 refused, 0 check failed, 0 vanished, 0 reverted$/m);
  for (const d of list) assert.equal((await server.skyport.services.firmwareUpdates.stateOf(d.id))?.error, 'refused');

  const other = await devices(1);
  firmware.target(other.list.map((d) => d.id), other.product.id, 8, firmwareBinary(other.product.id, 8, { dataSize: 20_000 }));
  const disabled = await simUntil(other.file, other.list.map((d) => d.id), 'pending', ['--updates-disabled']);
  assert.equal(disabled.code, 0, disabled.err);
  const bad = spawnSkyport(['sim', '--credentials', file, '--mqtt-url', server.mqttUrl, '--fail-updates', 'refuse=2'], {});
  assert.equal(await bad.exit, 1);
  assert.match(bad.err(), /^skyport: --fail-updates: refuse takes a share from 0 to 1, such as refuse=0.05\n$/);
});
