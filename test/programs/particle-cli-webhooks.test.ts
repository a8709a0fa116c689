import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { raw } from '../helpers/http.js';
import { ensureParticleCli, particle, PARTICLE_CLI_VERSION, type CliResult } from '../helpers/particle-cli.js';

/**
 * The real particle-cli 3.43.1, unchanged, against Skyport's webhooks (docs/compatibility.md):
 * `webhook create` (arguments, a device, a JSON file, GET and POST), `webhook list`, `webhook
 * delete <id>` and `webhook delete all`, and a refusal as it shows it. particle-cli 3.49's
 * `integration` commands cannot run on Node 20; test/webhooks-api.test.ts replays their requests.
 */
const install = await ensureParticleCli();
const skip = install.ok ? false : install.reason;
if (!install.ok) console.log(`# skipped: ${install.reason}`);

describe(`particle-cli ${PARTICLE_CLI_VERSION} webhook commands`, { skip }, () => {
  let server: TestServer;
  let home: string;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let receiverUrl: string;
  const receiver = createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')); });

  const cli = (args: string[], answers?: Array<[RegExp, string]>): Promise<CliResult> => {
    if (!install.ok) throw new Error('particle-cli is not installed');
    return particle(install.entry, args, { home, ...(answers ? { answers } : {}) });
  };
  const ok = (r: CliResult, what: string) => assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.out}`);
  const listed = async () => (await raw(`${server.url}/v1/webhooks`, { token: owner.token })).json as Array<Record<string, unknown>>;
  const idIn = (r: CliResult) => {
    const m = /Successfully created webhook with ID ([0-9a-f]{24})/.exec(r.out);
    assert.ok(m, r.out);
    return m[1] as string;
  };

  before(async () => {
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
    owner = await signUp(server.url);
    home = await mkdtemp(join(tmpdir(), 'skyport-particle-home-'));
    await mkdir(join(home, '.particle'));
    await writeFile(join(home, '.particle', 'particle.config.json'), JSON.stringify({ apiUrl: server.url, access_token: owner.token, username: owner.username }));
  });

  after(async () => {
    await server?.close();
    receiver.closeAllConnections();
    receiver.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  test('webhook create with arguments, a device, GET, and a JSON file; webhook list shows each', async () => {
    const product = await newProduct(server.url, owner.token);
    const { id: device } = await provision(server.url, owner.token, product.id);
    assert.equal((await raw(`${server.url}/v1/devices`, { method: 'POST', token: owner.token, json: { id: device } })).status, 200);

    const plain = await cli(['webhook', 'create', 'temp', `${receiverUrl}/temp`]);
    ok(plain, 'webhook create');
    const plainId = idIn(plain);
    const forDevice = await cli(['webhook', 'create', 'door', `${receiverUrl}/door`, device]);
    ok(forDevice, 'webhook create with a device');
    const get = await cli(['webhook', 'GET', 'query', `${receiverUrl}/query`]);
    ok(get, 'webhook GET');
    const file = join(home, 'hook.json');
    await writeFile(file, JSON.stringify({
      event: 'gps', url: `${receiverUrl}/gps`, requestType: 'PUT', json: { loc: '{{{PARTICLE_EVENT_VALUE}}}' }, headers: { 'X-Key': 'k' },
      _: 'The following parameters are optional', rejectUnauthorized: 'false', noDefaults: true,
    }));
    const fromFile = await cli(['webhook', 'create', file]);
    ok(fromFile, 'webhook create hook.json');
    assert.match(fromFile.out, /Using settings from the file .*hook\.json/);

    const hooks = await listed();
    const byId = new Map(hooks.map((h) => [h.id, h]));
    assert.deepEqual([byId.get(plainId)?.event, byId.get(plainId)?.url, byId.get(plainId)?.requestType], ['temp', `${receiverUrl}/temp`, 'POST']);
    assert.equal(byId.get(idIn(forDevice))?.deviceID, device);
    assert.equal(byId.get(idIn(get))?.requestType, 'GET');
    const gps = byId.get(idIn(fromFile));
    assert.deepEqual([gps?.requestType, gps?.json, gps?.headers, gps?.rejectUnauthorized, gps?.noDefaults], ['PUT', { loc: '{{{PARTICLE_EVENT_VALUE}}}' }, { 'X-Key': 'k' }, false, true]);

    const list = await cli(['webhook', 'list']);
    ok(list, 'webhook list');
    assert.match(list.out, /Found 4 hooks registered/);
    for (const h of hooks) {
      assert.match(list.out, new RegExp(`\\.\\) Hook ID ${h.id} is watching for "${h.event}"\\s+and sending to: ${String(h.url).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    }
    assert.match(list.out, new RegExp(`for device ${device}`));
    assert.match(list.out, /created at \d{4}-\d{2}-\d{2}T/);
  });

  test('a refused address: the command fails with the server\'s words', async () => {
    const refused = await cli(['webhook', 'create', 'temp', 'http://10.0.0.1/hook']);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /Error creating webhook: url: 10\.0\.0\.1 is a loopback, private, link-local or metadata address/);
    const noUrl = await cli(['webhook', 'create', 'temp', 'not a url']);
    assert.equal(noUrl.code, 1, noUrl.out);
    assert.match(noUrl.out, /Error creating webhook: url must start with http:\/\/ or https:\/\//);
  });

  test('webhook delete <id>, an unknown id, and delete all', async () => {
    const before = await listed();
    assert.ok(before.length >= 2, 'the webhooks of the first test');
    const [first] = before;
    const one = await cli(['webhook', 'delete', String(first?.id)]);
    ok(one, 'webhook delete');
    assert.match(one.out, /Successfully deleted webhook!/);
    assert.equal((await listed()).length, before.length - 1);

    const unknown = await cli(['webhook', 'delete', String(first?.id)]);
    assert.equal(unknown.code, 1, unknown.out);
    assert.match(unknown.out, /Error deleting webhook: not_found/);

    const all = await cli(['webhook', 'delete', 'all'], [[/Do you want to delete ALL your webhooks\?/, 'y']]);
    ok(all, 'webhook delete all');
    assert.match(all.out, new RegExp(`Found ${before.length - 1} hooks registered`));
    assert.deepEqual(await listed(), []);
    const empty = await cli(['webhook', 'list']);
    ok(empty, 'webhook list');
    assert.match(empty.out, /Found 0 hooks registered/);
  });
});
