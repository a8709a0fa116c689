import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { cliHome, failedWith, skyport } from '../helpers/cli.js';

/** The skyport CLI: `webhook create|list|get|update|delete|log|test|resend|replay|rotate-secret`. */
let server: TestServer;
const got: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => { body += c.toString(); });
  req.on('end', () => { got.push({ path: (req.url ?? '').split('?')[0] as string, headers: req.headers, body }); res.end('received'); });
});
let hooks: string;
before(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
});
after(async () => {
  await server.close();
  receiver.closeAllConnections();
  receiver.close();
});

const at = (path: string) => got.filter((g) => g.path === path);

test('webhook create prints the signing secret once; list, get, update (--disable, --enable) and delete, of your account', async () => {
  const { token } = await signUp(server.url);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url };
  const [people, script] = await Promise.all([
    skyport(['webhook', 'create', 'temp', `${hooks}/temp`, '--name', 'Temperatures', '--request-type', 'put', '--header', 'X-Key: k1'], { home, env }),
    skyport(['webhooks', 'create', 'door', `${hooks}/door`, '--json'], { home, env }),
  ]);
  assert.equal(people.code, 0, people.stderr);
  assert.match(people.stdout, /^signing secret\s+whsec_\S+$/m, 'the secret, once, for people too');
  assert.match(people.stdout, /^request type\s+PUT$/m);
  assert.match(people.stdout, /^headers\s+\{"X-Key":"k1"\}$/m);
  assert.match(people.stderr, /Store the signing secret now/);
  const id = /^id\s+([0-9a-f]{24})$/m.exec(people.stdout)?.[1];
  assert.ok(id, people.stdout);
  assert.equal(script.code, 0, script.stderr);
  assert.equal(script.json.ok, true);
  assert.match(script.json.secret, /^whsec_/);
  assert.equal(script.json.hookUrl, `${server.url}/v1/webhooks/${script.json.id}`);

  const [list, get] = await Promise.all([skyport(['webhook', 'list'], { home, env }), skyport(['webhook', 'get', id], { home, env })]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+EVENT\s+URL\s+TYPE\s+DEVICE\s+STATE\s+NAME$/m);
  assert.match(list.stdout, new RegExp(`^${id}\\s+temp\\s+${hooks}/temp\\s+PUT\\s+any\\s+enabled\\s+Temperatures$`, 'm'));
  assert.match(list.stdout, new RegExp(`^${script.json.id}\\s+door\\s+`, 'm'));
  assert.doesNotMatch(list.stdout + get.stdout, /whsec_/, 'never the secret again');
  assert.match(get.stdout, /^last 30 days\s+0 delivered, 0 failed, 0 skipped, 0 waiting$/m);

  const off = await skyport(['webhook', 'update', id, '--disable', '--name', 'Off'], { home, env });
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /^state\s+disabled$/m);
  assert.match(off.stdout, /^name\s+Off$/m);
  assert.match(off.stdout, /^request type\s+PUT$/m, 'the other fields stay');
  const on = await skyport(['webhook', 'update', id, '--enable', '--json'], { home, env });
  assert.equal(on.json.disabled, false);

  const gone = await skyport(['webhook', 'delete', id], { home, env });
  assert.equal(gone.code, 0, gone.stderr);
  assert.match(gone.stdout, new RegExp(`deleted webhook ${id} of your account`));
  const left = await raw(`${server.url}/v1/webhooks`, { token });
  assert.deepEqual(left.json.map((h: { id: string }) => h.id), [script.json.id]);
});

test('a product\'s webhook from a JSON file: test, log, resend, replay and rotate-secret', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url };
  const p = product.slug;
  const file = join(home, 'hook.json');
  await writeFile(file, JSON.stringify({ event: 'gps', url: `${hooks}/gps`, noDefaults: true, json: { where: '{{{PARTICLE_EVENT_VALUE}}}' } }));
  const made = await skyport(['webhook', 'create', '--file', file, '--product', p, '--json'], { home, env });
  assert.equal(made.code, 0, made.stderr);
  const { id, secret } = made.json as { id: string; secret: string };
  assert.deepEqual(made.json.json, { where: '{{{PARTICLE_EVENT_VALUE}}}' });

  const sent = await skyport(['webhook', 'test', id, '--data', 'here', '--product', p], { home, env });
  assert.equal(sent.code, 0, sent.stderr);
  const delivery = /delivery (msg_\S+)/.exec(sent.stdout)?.[1];
  assert.ok(delivery, sent.stdout);
  const [first] = await eventually(() => (at('/gps').length === 1 ? at('/gps') : undefined));
  assert.deepEqual(new Webhook(secret).verify(first!.body, first!.headers as Record<string, string>), { where: 'here' });

  const log = await eventually(async () => {
    const r = await skyport(['webhook', 'log', id, '--product', p], { home, env });
    return /delivered/.test(r.stdout) ? r : undefined;
  });
  assert.equal(log.code, 0, log.stderr);
  assert.match(log.stdout, new RegExp(`^${delivery}  delivered  gps "here"  \\d{4}-`, 'm'));
  assert.match(log.stdout, /^ {2}#1 \S+ delivered 200 \d+ ms "received"$/m);

  const again = await skyport(['webhook', 'resend', id, delivery, '--product', p], { home, env });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, new RegExp(`resending ${delivery} as delivery msg_`));
  const replay = await skyport(['webhook', 'replay', id, '--from', new Date(Date.now() - 60_000).toISOString(), '--product', p], { home, env });
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(replay.stdout, /^replaying 1 delivery made from /m);
  await eventually(() => (at('/gps').length === 3 ? true : undefined));

  const paged = await skyport(['webhook', 'log', id, '--limit', '1', '--product', p, '--json'], { home, env });
  assert.equal(paged.json.deliveries.length, 1);
  assert.match(paged.stderr, new RegExp(`more: skyport webhook log ${id} --before msg_\\S+ --product ${p}`));

  const rotated = await skyport(['webhook', 'rotate-secret', id, '--product', p], { home, env });
  assert.equal(rotated.code, 0, rotated.stderr);
  const next = /^signing secret\s+(whsec_\S+)$/m.exec(rotated.stdout)?.[1];
  assert.ok(next && next !== secret, rotated.stdout);
  assert.match(rotated.stdout, /^old secret signs until\s+\d{4}-/m);
  assert.match(rotated.stderr, /Store the new secret now/);

  const list = await skyport(['webhook', 'list', '--product', String(product.id)], { home, env });
  assert.match(list.stdout, new RegExp(`^${id}\\s+gps\\s+`, 'm'));
  const mine = await skyport(['webhook', 'list'], { home, env });
  assert.match(mine.stdout, /^no webhooks \(your account\)$/m, 'a product\'s webhooks are not the account\'s');
});

test('webhook: missing arguments, bad flags, a refused address, a device on a product\'s webhook and an unknown webhook each fail with one line', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url };
  const results = await Promise.all([
    skyport(['webhook', 'create', 'temp'], { home, env }),
    skyport(['webhook', 'create', 'temp', `${hooks}/x`, '--header', 'no-colon'], { home, env }),
    skyport(['webhook', 'create', 'temp', 'http://192.168.0.10/x'], { home, env }),
    skyport(['webhook', 'create', 'temp', `${hooks}/x`, '--device', '0123456789abcdef01234567', '--product', product.slug], { home, env }),
    skyport(['webhook', 'create', '--file', join(home, 'missing.json')], { home, env }),
    skyport(['webhook', 'get', '0123456789abcdef01234567'], { home, env }),
    skyport(['webhook', 'update', '0123456789abcdef01234567'], { home, env }),
    skyport(['webhook', 'update', '0123456789abcdef01234567', '--enable', '--disable'], { home, env }),
    skyport(['webhook', 'replay', '0123456789abcdef01234567'], { home, env }),
    skyport(['webhook', 'log', '0123456789abcdef01234567', '--limit', '0'], { home, env }),
    skyport(['webhook', 'list'], { home, env: { SKYPORT_API_URL: server.url } }),
  ]);
  const [noUrl, header, refused, device, missing, unknown, nothing, both, noFrom, limit, anonymous] = results;
  failedWith(noUrl!, /webhook create needs an event and a URL/);
  failedWith(header!, /--header must be "Name: value", not "no-colon"/);
  failedWith(refused!, /invalid_request: url: 192\.168\.0\.10 is a loopback, private, link-local or metadata address.*WEBHOOK_ALLOW_PRIVATE.*\[400\]$/);
  failedWith(device!, /a product's webhook fires for the whole fleet; it takes no device \[400\]$/);
  failedWith(missing!, /cannot read .*missing\.json: no such file/);
  failedWith(unknown!, /not_found: No such webhook of yours \[404\]$/);
  failedWith(nothing!, /webhook update needs something to change/);
  failedWith(both!, /--enable or --disable, not both/);
  failedWith(noFrom!, /webhook replay needs --from/);
  failedWith(limit!, /--limit must be a whole number from 1 to 100/);
  failedWith(anonymous!, /not logged in/);
  assert.deepEqual((await raw(`${server.url}/v1/webhooks`, { token })).json, [], 'nothing was created');
});
