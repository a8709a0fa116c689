import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { firmwareBinary, reportVersion, uploaded } from '../helpers/firmware.js';
import { cliHome, failedWith, skyport } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { runSimulation } from '../../src/sim/simulator.js';

/** The skyport CLI: `firmware upload|list|get|edit|delete|release|progress|download` and `groups list|create|edit|delete|add|remove`. */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

async function team() {
  const { token, username } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const home = await cliHome();
  return { token, username, product, home, env: { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url } };
}

test('firmware upload (its version read from the binary, or given), list, get, edit, download and delete; a refused binary in one line', async () => {
  const { token, username, product, home, env } = await team();
  const run = (args: string[]) => skyport(args, { home, env });
  const file = (name: string, image: Buffer) => writeFile(join(home, name), image).then(() => join(home, name));
  const two = firmwareBinary(product.id, 2, { dataSize: 2048 });
  const [blink, other, plain] = await Promise.all([file('blink.bin', two), file('other.bin', firmwareBinary(product.id + 1, 3)), file('plain.bin', Buffer.from('not a module'))]);

  const [made, wrong, notModule] = await Promise.all([
    run(['firmware', 'upload', blink, '--title', 'Blink', '--description', 'blinks']),
    run(['firmware', 'upload', other]),
    run(['firmware', 'upload', plain, '4']),
  ]);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, new RegExp(`^uploaded version 2 \\(Blink, ${two.length} bytes\\) to product ${product.slug}; release it with \`skyport firmware release 2\`$`, 'm'));
  failedWith(wrong, /^skyport: invalid_firmware: The binary's module suffix names product \d+; this is product \d+ \[400\]$/);
  failedWith(notModule, /^skyport: invalid_firmware: The file is not a Particle module binary .* \[400\]$/);
  failedWith(await run(['firmware', 'upload', join(home, 'nowhere.bin')]), /cannot read .*nowhere\.bin: no such file$/);
  failedWith(await run(['firmware', 'upload', plain]), /plain\.bin carries no product version in a module suffix: give the version after the file$/);

  const three = await run(['firmware', 'upload', await file('three.bin', firmwareBinary(product.id, 3)), '3', '--json']);
  assert.equal(three.code, 0, three.stderr);
  assert.deepEqual([three.json.version, three.json.title, three.json.name], [3, 'Version 3', 'three.bin']);

  const [list, get, json] = await Promise.all([run(['firmware', 'list']), run(['firmware', 'get', '2']), run(['firmware', 'list', '--json'])]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^VERSION\s+TITLE\s+SIZE\s+DEVICES\s+RELEASED TO\s+UPLOADED\s+BY$/m);
  assert.match(list.stdout, new RegExp(`^3\\s+Version 3\\s+[\\d.]+ KiB\\s+0\\s+not released\\s+\\S+\\s+${username.replace(/[.+]/g, '\\$&')}$`, 'm'));
  assert.ok(list.stdout.indexOf('Version 3') < list.stdout.indexOf('Blink'), 'newest first');
  assert.match(get.stdout, /^description\s+blinks$/m);
  assert.match(get.stdout, new RegExp(`^size\\s+${two.length} bytes$`, 'm'));
  assert.deepEqual(json.json.map((f: { version: number }) => f.version), [3, 2]);

  const edited = await run(['firmware', 'edit', '2', '--title', 'Blink fast', '--description', '']);
  assert.equal(edited.code, 0, edited.stderr);
  assert.match(edited.stdout, /^title\s+Blink fast$/m);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/firmware/2`, { token })).json.description, '');
  failedWith(await run(['firmware', 'edit', '2']), /firmware edit needs --title or --description$/);

  const out = join(home, 'saved.bin');
  const saved = await run(['firmware', 'download', '2', '--out', out]);
  assert.equal(saved.code, 0, saved.stderr);
  assert.deepEqual(await readFile(out), two, 'the binary as uploaded');
  failedWith(await run(['firmware', 'download', '2', '--out', out]), /saved\.bin exists: move it away or choose another --out$/);
  failedWith(await run(['firmware', 'download', '9', '--out', join(home, 'nine.bin')]), /^skyport: not_found: The product has no firmware version 9 \[404\]$/);
  failedWith(await run(['firmware', 'get', 'two']), /the version must be a whole number from 1 to 65535, not "two"$/);

  const gone = await run(['firmware', 'delete', '3']);
  assert.match(gone.stdout, new RegExp(`^deleted version 3 of product ${product.slug}$`, 'm'));
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/firmware/3`, { token })).status, 404);
});

test('firmware release: a dry run counts the devices it would update; to groups with the server\'s warning; as the product default and not', async () => {
  const { token, product, home, env } = await team();
  const run = (args: string[]) => skyport(args, { home, env });
  const devices = await Promise.all([0, 1, 2].map(() => provision(server.url, token, product.id)));
  await Promise.all(devices.map((d) => reportVersion(server.url, server.mqttUrl, token, product.id, d, 1)));
  await uploaded(server.url, token, product.id, 1);
  await uploaded(server.url, token, product.id, 2);
  const added = await run(['groups', 'add', 'beta', devices[0]!.id, devices[1]!.id]);
  assert.equal(added.code, 0, added.stderr);

  const dry = await run(['firmware', 'release', '2', '--group', 'beta', '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.stdout, 'dry run: releasing version 2 to groups beta: 2 devices would update (2 from version 1); nothing released\n');
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/firmware/2`, { token })).json.released_at, null, 'nothing released');

  const released = await run(['firmware', 'release', '2', '--groups', 'beta', '--intelligent']);
  assert.equal(released.code, 0, released.stderr);
  assert.equal(released.stdout, `released version 2 of product ${product.slug}: groups beta; online devices update now\n`);
  assert.match(released.stderr, /^warning: No device of the product runs version 2 yet\. Particle refuses/m);
  const targets = async () => Promise.all(devices.map(async (d) => (await raw(`${server.url}/v1/products/${product.id}/devices/${d.id}`, { token })).json.targeted_firmware_release_version));
  assert.deepEqual(await targets(), [2, 2, null]);

  // Neither flag: the product default (as releaseProductFirmware({version}) does); the groups stay.
  const byDefault = await run(['firmware', 'release', '1', '--json']);
  assert.deepEqual([byDefault.json.product_default, byDefault.json.groups, byDefault.json.warnings], [true, [], []]);
  assert.deepEqual(await targets(), [2, 2, 1]);
  const dryDefault = await run(['firmware', 'release', '2', '--default', '--dry-run', '--json']);
  assert.deepEqual(dryDefault.json.devices.firmware_update, { total: 1, by_version: [{ version: 1, total: 1 }] });
  const notDefault = await run(['firmware', 'release', '1', '--no-default']);
  assert.equal(notDefault.stdout, `released version 1 of product ${product.slug}: no longer released; devices update when they next connect\n`);
  assert.deepEqual(await targets(), [2, 2, null]);
  failedWith(await run(['firmware', 'release', '2', '--groups', 'nope']), /^skyport: invalid_request: .*nope.* \[400\]$/);
});

test('firmware progress: where the devices\' updates stand, by version', async () => {
  const { token, product, home, env } = await team();
  const run = (args: string[]) => skyport(args, { home, env });
  const none = await run(['firmware', 'progress']);
  assert.equal(none.stdout, `no updates yet (product ${product.slug})\n`);
  await uploaded(server.url, token, product.id, 2);
  const who = await provision(server.url, token, product.id);
  const sim = await runSimulation({ mqttUrl: server.mqttUrl, identities: [who], firmwareVersion: 1 });
  try {
    await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.firmware_version === 1 ? true : undefined));
    assert.equal((await run(['firmware', 'release', '2', '--default', '--intelligent'])).code, 0);
    await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.firmware_version === 2 ? true : undefined), 15_000, 'the device updated');
    const [people, script] = await Promise.all([run(['firmware', 'progress']), run(['firmware', 'progress', '--json'])]);
    assert.equal(people.code, 0, people.stderr);
    assert.match(people.stdout, /^VERSION\s+DEVICES\s+UPDATED\s+APPLYING\s+DOWNLOADING\s+WAITING\s+FAILED$/m);
    assert.match(people.stdout, /^2\s+1\s+1\s+0\s+0\s+0\s+0$/m);
    assert.deepEqual(script.json, { versions: [{ version: 2, total: 1, states: { pending: 0, downloading: 0, applying: 0, succeeded: 1, failed: 0 } }] });
  } finally {
    await Promise.all(sim.devices.map((d) => d.close()));
  }
});

test('groups create, list, edit, add and remove devices, delete; the fleet listed by group; a refused name in one line', async () => {
  const { token, product, home, env } = await team();
  const run = (args: string[]) => skyport(args, { home, env });
  const [a, b] = await Promise.all([0, 1].map(() => provision(server.url, token, product.id)));

  const made = await run(['groups', 'create', 'europe', '--color', '#E74C3C', '--description', 'EU devices']);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /^color\s+#e74c3c$/m);
  failedWith(await run(['group', 'create', 'Europe']), /^skyport: invalid_request: name "Europe" may hold only lower-case letters a-z, digits, dashes and underscores \[400\]$/);
  failedWith(await run(['groups', 'create', 'europe']), /^skyport: conflict: The product has a group "europe" already \[409\]$/);

  const added = await run(['groups', 'add', 'europe', a!.id, b!.id]);
  assert.equal(added.stdout, `added 2 devices to group europe (product ${product.slug})\n`);
  const removed = await run(['groups', 'remove', 'europe', b!.id, '--json']);
  assert.deepEqual([removed.json.ok, removed.json.group, removed.json.devices], [true, 'europe', [b!.id]]);
  failedWith(await run(['groups', 'add', 'europe', '0123456789abcdef01234567']), /^skyport: invalid_request: Not devices of this product: 0123456789abcdef01234567 \[400\]$/);

  const [list, fleet] = await Promise.all([run(['groups', 'list']), run(['product', 'device', 'list', '--group', 'europe'])]);
  assert.match(list.stdout, /^NAME\s+DEVICES\s+FIRMWARE\s+COLOR\s+DESCRIPTION$/m);
  assert.match(list.stdout, /^europe\s+1\s+-\s+#e74c3c\s+EU devices$/m);
  assert.match(fleet.stdout, new RegExp(`^${a!.id}\\s.*\\seurope$`, 'm'));
  assert.doesNotMatch(fleet.stdout, new RegExp(b!.id));

  const renamed = await run(['groups', 'edit', 'europe', '--name', 'eu-west', '--color', '']);
  assert.equal(renamed.code, 0, renamed.stderr);
  assert.match(renamed.stdout, /^name\s+eu-west$/m);
  assert.match(renamed.stdout, /^color\s+-$/m);
  assert.deepEqual((await raw(`${server.url}/v1/products/${product.id}/devices/${a!.id}`, { token })).json.groups, ['eu-west']);
  failedWith(await run(['groups', 'edit', 'eu-west']), /groups edit needs --name, --color or --description$/);

  const gone = await run(['groups', 'delete', 'eu-west']);
  assert.equal(gone.stdout, `deleted group eu-west of product ${product.slug}\n`);
  const none = await run(['groups', 'list', '--json']);
  assert.deepEqual(none.json, { groups: [] });
  assert.deepEqual((await raw(`${server.url}/v1/products/${product.id}/devices/${a!.id}`, { token })).json.groups, []);
});
