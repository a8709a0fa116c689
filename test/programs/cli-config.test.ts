import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision, type Identity } from '../helpers/device.js';
import { cliHome, skyport, type CliResult } from '../helpers/cli.js';
import { defaultSchema } from '../../src/domain/config/default-schema.js';

/**
 * The configuration and schema commands of the skyport CLI against a real cloud: values of the
 * fleet and of devices (every outcome of a device write), the editor loop with its dry run,
 * history, diff, rollback, explain, rollout status, and the schema's get/set/diff/reset.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let server: TestServer;
let token: string;
let home: string;
before(async () => {
  server = await startTestServer({ env: { DEVICE_CALL_TIMEOUT_SECONDS: '1' } });
  ({ token } = await signUp(server.url));
  home = await cliHome();
  await mkdir(join(home, 'tmp'));
});
after(async () => { await server.close(); });

const run = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  skyport(args, { home, env: { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url, TMPDIR: join(home, 'tmp'), ...env } });
const file = async (name: string, content: string) => { const path = join(home, name); await writeFile(path, content); return path; };
const api = (path: string, init: Parameters<typeof raw>[1] = {}) => raw(`${server.url}${path}`, { token, ...init });
function failed(r: CliResult, pattern: RegExp): void {
  assert.equal(r.code, 1, r.stdout);
  const lines = r.stderr.trim().split('\n');
  assert.match(lines[lines.length - 1] as string, pattern);
}

/** A plain mqtt.js device (docs/device-protocol.md, "Configuration") that takes every module but `refuse`; `silent`: it never answers. */
async function configDevice(who: Identity, options: { refuse?: string[]; silent?: boolean } = {}) {
  const c = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  c.on('message', (topic, payload) => {
    if (options.silent || !topic.endsWith('/cloud/config/set')) return;
    const m = JSON.parse(payload.toString()) as { id: string; module: string };
    void c.publishAsync(`devices/${who.id}/config/ack`, JSON.stringify({ id: m.id, status: options.refuse?.includes(m.module) ? -22 : 0 }));
  });
  await c.subscribeAsync(`devices/${who.id}/cloud/#`, { qos: 1 });
  if (!options.silent) await c.publishAsync(`devices/${who.id}/config/hello`, JSON.stringify({ modules: {} }), { qos: 1 });
  return c;
}

test('fleet values: get, set from a file, an argument and --reset; bad JSON and invalid values refused; history, diff, rollback', async () => {
  const p = String((await newProduct(server.url, token)).id);
  const values = await file('values.json', JSON.stringify({ rgb: { type: 'off' } }));
  const bad = await file('bad.json', '{"rgb":');
  // The read first: the writes below would race it.
  const got = await run(['config', 'get', '--product', p]);
  const [fromFile, badFile, missing] = await Promise.all([
    run(['config', 'set', '--product', p, '--file', values]),
    run(['config', 'set', '--product', p, '--file', bad]),
    run(['config', 'set', '--product', p, '--file', join(home, 'nowhere.json')]),
  ]);
  assert.equal(got.code, 0, got.stderr);
  assert.equal(JSON.parse(got.stdout).rgb.type, 'particle', 'the values JSON, defaults filled');
  assert.equal(fromFile.code, 0, fromFile.stderr);
  assert.match(fromFile.stdout, /^saved the fleet's values: version 1; connected devices take it now/);
  failed(badFile, /^skyport: .*bad\.json is not valid JSON/);
  failed(missing, /^skyport: cannot read .*nowhere\.json: no such file$/);

  const [inline, invalid, neither] = await Promise.all([
    run(['config', 'set', '--product', p, '{"rgb":{"type":"tracker"},"sleep":{"mode":"enable"}}', '--json']),
    run(['config', 'set', '--product', p, '{"rgb":{"type":"disco"},"sleep":{"mode":"sometimes"}}']),
    run(['config', 'set', '--product', p]),
  ]);
  assert.equal(inline.code, 0, inline.stderr);
  assert.equal(inline.json.version, 2);
  assert.equal(inline.json.configuration.sleep.mode, 'enable');
  failed(invalid, /^skyport: invalid_configuration: .*2 rules; nothing was changed \[400\]$/);
  assert.match(invalid.stderr, /^invalid \/rgb\/type: .*\ninvalid \/sleep\/mode: /, 'each violation on its own line');
  failed(neither, /^skyport: give the values once/);

  const [history, diff, unknown] = await Promise.all([
    run(['config', 'history', '--product', p]),
    run(['config', 'diff', '2', '--product', p]),
    run(['config', 'diff', '99', '--product', p]),
  ]);
  assert.equal(history.code, 0, history.stderr);
  const rows = history.stdout.trim().split('\n');
  assert.match(rows[0] as string, /^VERSION\s+KIND\s+SCOPE\s+ACTION\s+BY\s+AT$/);
  assert.deepEqual(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 4)), [['2', 'values', 'fleet', 'write'], ['1', 'values', 'fleet', 'write']], 'the invalid write is not recorded');
  assert.equal(diff.code, 0, diff.stderr);
  assert.equal(diff.stdout, 'version 2 against version 1 (values, fleet)\n~ /rgb/type: "off" -> "tracker"\n+ /sleep: {"mode":"enable"}\n');
  failed(unknown, /^skyport: not_found: .*version 99 \[404\]$/);

  const back = await run(['config', 'rollback', '1', '--product', p]);
  assert.equal(back.code, 0, back.stderr);
  assert.match(back.stdout, /^version 1 restored: version 3;/);
  const fleet = (await api(`/v1/products/${p}/config`)).json.configuration;
  assert.deepEqual([fleet.rgb.type, fleet.sleep.mode], ['off', 'disable']);
  const [latest, backAgainst] = await Promise.all([
    run(['config', 'history', '--product', p, '--fleet', '--per-page', '1', '--json']),
    run(['config', 'diff', '3', '--against', '2', '--product', p, '--json']),
  ]);
  assert.equal(latest.json.history[0].rolled_back_from, 1);
  assert.deepEqual(backAgainst.json.changes.map((c: Json) => [c.path, c.op]), [['/rgb/type', 'replace'], ['/sleep', 'remove']]);
  const reset = await run(['config', 'set', '--product', p, '--reset', '--json']);
  assert.equal(reset.json.version, 4);
  assert.equal(reset.json.configuration.rgb.type, 'particle');
});

test('config edit: the editor gets the values, violations reopen it with them noted, the valid values are sent; unchanged sends nothing', async () => {
  const p = String((await newProduct(server.url, token)).id);
  // An editor that makes the values invalid the first time and valid the second, and keeps a copy
  // of what it was shown each time.
  const log = join(home, 'editor.log');
  const editor = await file('editor.mjs', `
    import { appendFileSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
    const file = process.argv[2];
    const shown = readFileSync(file, 'utf8');
    const round = existsSync(${JSON.stringify(log)}) ? JSON.parse(readFileSync(${JSON.stringify(log)}, 'utf8')).length + 1 : 1;
    const seen = round === 1 ? [] : JSON.parse(readFileSync(${JSON.stringify(log)}, 'utf8'));
    writeFileSync(${JSON.stringify(log)}, JSON.stringify([...seen, shown]));
    const values = JSON.parse(shown.split('\\n').filter((l) => !l.startsWith('//')).join('\\n'));
    values.rgb.type = round === 1 ? 'disco' : 'off';
    writeFileSync(file, JSON.stringify(values, null, 2));
  `);
  const edited = await run(['config', 'edit', '--product', p], { EDITOR: `"${process.execPath}" "${editor}"` });
  assert.equal(edited.code, 0, edited.stderr);
  assert.match(edited.stderr, /^invalid \/rgb\/type: /m, 'the violations are shown');
  assert.match(edited.stdout, /^saved the fleet's values \(0 devices change, 0 of them connected\): version 1;/);
  const shown = JSON.parse(await readFile(log, 'utf8')) as string[];
  assert.equal(shown.length, 2, 'reopened once');
  assert.match(shown[0] as string, /^\/\/ the fleet's values of product \d+\./);
  assert.equal(JSON.parse((shown[0] as string).split('\n').filter((l) => !l.startsWith('//')).join('\n')).rgb.type, 'particle');
  assert.match(shown[1] as string, /^\/\/ skyport: not sent; .*\n\/\/ invalid \/rgb\/type: /);
  assert.equal((await api(`/v1/products/${p}/config`)).json.configuration.rgb.type, 'off');
  assert.equal((await api(`/v1/products/${p}/config/history`)).json.meta.total, 1, 'the dry runs recorded nothing');

  const [unchanged, broken] = await Promise.all([
    run(['config', 'edit', '--product', p], { EDITOR: 'true' }),
    run(['config', 'edit', '--product', p], { EDITOR: 'false' }),
  ]);
  assert.equal(unchanged.code, 0, unchanged.stderr);
  assert.equal(unchanged.stdout, 'no changes: nothing sent\n');
  failed(broken, /^skyport: the editor \(false\) exited with status 1; nothing sent$/);
  assert.equal((await api(`/v1/products/${p}/config/history`)).json.meta.total, 1);
  assert.deepEqual(await readdir(join(home, 'tmp')), [], 'no temporary file left behind');
});

test('device values: applied, held for an offline device, refused with codes, timed out; get, explain and status', async () => {
  const p = String((await newProduct(server.url, token)).id);
  const [a, b, c, d] = await Promise.all([0, 1, 2, 3].map(() => provision(server.url, token, Number(p)))) as [Identity, Identity, Identity, Identity];
  const devA = await configDevice(a);
  const devC = await configDevice(c, { refuse: ['geofence'] });
  const devD = await configDevice(d, { silent: true });
  try {
    const set = (who: Identity, ...more: string[]) => run(['config', 'set', '--product', p, '--device', who.id, '{"geofence":{"interval":30}}', ...more]);
    const [applied, held, refused, timedOut, fleetModule] = await Promise.all([
      set(a), set(b), set(c), set(d), run(['config', 'set', '--product', p, '--device', a.id, '{"rgb":{"type":"off"}}']),
    ]);
    const heldJson = await run(['config', 'set', '--product', p, '--device', b.id, '{"geofence":{"interval":40}}', '--json']);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, new RegExp(`^applied: device ${a.id} took it \\(version \\d+; its own values replaced\\)\\n$`));
    assert.equal(held.code, 0, held.stderr);
    assert.match(held.stdout, new RegExp(`^held: device ${b.id} is offline and takes version \\d+ when it next connects`));
    assert.equal(heldJson.code, 0, heldJson.stderr);
    assert.equal(typeof heldJson.json.version, 'number');
    assert.ok('geofence' in heldJson.json.configuration.pending);
    failed(refused, new RegExp(`^skyport: refused: device ${c.id} refused geofence \\(code -22\\); the values are stored .*\\[400\\]$`));
    failed(timedOut, new RegExp(`^skyport: timed out: device ${d.id} did not acknowledge in time; the values are stored and stay pending .*\\[408\\]$`));
    failed(fleetModule, /^skyport: invalid_configuration: .*\[400\]$/);
    assert.match(fleetModule.stderr, /^invalid \/rgb: /m);
    await devD.endAsync();

    const [own, effective, explain, deviceStatus, rollout, watched, unknown] = await Promise.all([
      run(['config', 'get', '--product', p, '--device', a.id, '--own']),
      run(['config', 'get', '--product', p, '--device', b.id]),
      run(['config', 'explain', '--product', p, '--device', a.id]),
      run(['config', 'status', '--product', p, '--device', b.id]),
      run(['config', 'status', '--product', p, '--json']),
      run(['config', 'status', '--product', p, '--watch', '--interval', '1']),
      run(['config', 'explain', '--product', p, '--device', 'ffffffffffffffffffffffff']),
    ]);
    assert.equal(own.code, 0, own.stderr);
    assert.deepEqual(JSON.parse(own.stdout), { geofence: { interval: 30 } });
    assert.equal(effective.code, 0, effective.stderr);
    assert.equal(JSON.parse(effective.stdout).geofence.interval, 40, 'the latest write, pending');
    assert.match(effective.stderr, /^pending \(the device has yet to take them\): .*geofence/m);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /^development no; device values win: no;/);
    assert.match(explain.stdout, /^\/geofence\/interval\s+30\s+device$/m);
    assert.match(explain.stdout, /^\/rgb\/type\s+"particle"\s+default$/m);
    assert.equal(deviceStatus.code, 0, deviceStatus.stderr);
    assert.match(deviceStatus.stdout, /^MODULE\s+STATE\s+SOURCE\s+CODE\s+SINCE$/m);
    assert.match(deviceStatus.stdout, /^geofence\s+pending\s+device\s+-\s+\d{4}-/m);
    assert.equal(rollout.code, 0, rollout.stderr);
    assert.equal(rollout.json.devices, 4);
    assert.equal(rollout.json.in_sync, 1, 'the device that took everything');
    assert.equal(rollout.json.rejected, 1, 'the device that refused geofence');
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(watched.stdout, /^4 devices: 1 in sync, 2 pending \(0 connected\), 1 refused\nMODULE\s+IN SYNC\s+PENDING\s+REFUSED\n/);
    assert.match(watched.stderr, /^4 devices: /, 'off a terminal, the watch says each change in a line');
    failed(unknown, /^skyport: not_found: .*\[404\]$/);
  } finally {
    await Promise.all([devA.endAsync(), devC.endAsync()]);
  }
});

test('schema get, diff, set (violations listed) and reset', async () => {
  const p = String((await newProduct(server.url, token)).id);
  const custom = defaultSchema() as Json;
  custom.properties.engine = {
    $id: '#/properties/engine', type: 'object', title: 'Engine', description: '', default: {},
    properties: { idle: { type: 'integer', title: 'Idle', description: '', default: 1600, minimum: 0, maximum: 10000 } },
  };
  const customFile = await file('custom.json', JSON.stringify(custom, null, 2));
  const broken = defaultSchema() as Json;
  delete broken.properties.rgb;
  const brokenFile = await file('broken.json', JSON.stringify(broken));
  const notJson = await file('schema.txt', 'not json');

  const [got, diff, invalid, unreadable] = await Promise.all([
    run(['schema', 'get', '--product', p]),
    run(['schema', 'diff', customFile, '--product', p]),
    run(['schema', 'set', brokenFile, '--product', p]),
    run(['schema', 'set', notJson, '--product', p]),
  ]);
  assert.equal(got.code, 0, got.stderr);
  assert.match(JSON.parse(got.stdout).$id, /\/v19$/);
  assert.deepEqual(Object.keys(JSON.parse(got.stdout).properties), Object.keys((defaultSchema() as Json).properties), 'key order kept');
  assert.equal(diff.code, 0, diff.stderr);
  assert.match(diff.stdout, /^\+ \/properties\/engine: \{/);
  assert.equal(diff.stdout.trim().split('\n').length, 1);
  failed(invalid, /^skyport: Invalid Schema: .*nothing was changed \[422\]$/);
  assert.match(invalid.stderr, /^invalid \/properties\/rgb: /m);
  failed(unreadable, /^skyport: .*schema\.txt is not valid JSON/);
  assert.equal((await api(`/v1/products/${p}/config/history`)).json.meta.total, 0, 'nothing stored');

  const set = await run(['schema', 'set', customFile, '--product', p]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, 'Schema saved (version 1)\n');
  const same = await run(['schema', 'diff', customFile, '--product', p, '--json']);
  assert.equal(same.code, 0, same.stderr);
  assert.deepEqual(same.json.changes, []);
  const first = await run(['schema', 'reset', '--product', p]);
  const again = await run(['schema', 'reset', '--product', p]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout, 'Schema reverted to default (version 2)\n');
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'the schema already is the default: nothing changed\n');
  assert.equal((await api(`/v1/products/${p}/config`, { headers: { accept: 'application/schema+json' } })).json.properties.engine, undefined);
});
