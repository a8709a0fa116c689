import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { email, startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { cliHome, failedWith, skyport } from '../helpers/cli.js';

/**
 * The skyport CLI: `product create|list|show`, `product device add|list|remove|dev`,
 * `product team list|add|remove`, `customer create|list|delete` and `claim-code`.
 */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });


async function user() {
  const { token, username, password } = await signUp(server.url);
  return { token, username, password, home: await cliHome(), env: { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url } };
}

test('product create, list and show (by slug or id); the only product is the default; bad flags and unknown products fail', async () => {
  const { token, home, env } = await user();
  const none = await skyport(['product', 'show'], { home, env });
  failedWith(none, /manages no product: create one with `skyport product create`/);

  const made = await skyport(['product', 'create', '--name', 'CLI Fleet', '--platform-id', '6', '--description', 'photons', '--json'], { home, env });
  assert.equal(made.code, 0, made.stderr);
  const product = made.json.product as { id: number; slug: string };
  assert.equal(made.json.ok, true);
  assert.equal(made.json.product.platform_id, 6);
  assert.equal((await raw(`${server.url}/v1/products/${product.slug}`, { token })).json.product.description, 'photons');

  const [list, bySlug, byId, only] = await Promise.all([
    skyport(['product', 'list'], { home, env }),
    skyport(['product', 'show', product.slug], { home, env }),
    skyport(['product', 'show', String(product.id), '--json'], { home, env }),
    skyport(['product', 'show', '--json'], { home, env }),
  ]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+SLUG\s+NAME\s+PLATFORM\s+DESCRIPTION$/m);
  assert.match(list.stdout, new RegExp(`^${product.id}\\s+${product.slug}\\s+CLI Fleet\\s+6\\s+photons$`, 'm'));
  assert.equal(bySlug.code, 0, bySlug.stderr);
  assert.match(bySlug.stdout, /^platform id\s+6$/m);
  assert.match(bySlug.stdout, new RegExp(`^slug\\s+${product.slug}$`, 'm'));
  assert.equal(byId.json.product.slug, product.slug);
  assert.equal(only.json.product.id, product.id, 'the only product, without naming it');

  await newProduct(server.url, token, 'Second Fleet');
  const [two, noName, noPlatform, badPlatform, unknown, listJson] = await Promise.all([
    skyport(['product', 'show'], { home, env }),
    skyport(['product', 'create', '--platform-id', '6'], { home, env }),
    skyport(['product', 'create', '--name', 'X'], { home, env }),
    skyport(['product', 'create', '--name', 'X', '--platform-id', 'photon'], { home, env }),
    skyport(['product', 'show', 'no-such-product'], { home, env }),
    skyport(['product', 'list', '--json'], { home, env }),
  ]);
  failedWith(two, /manages 2 products: name one \(one of /);
  failedWith(noName, /product create needs --name/);
  failedWith(noPlatform, /product create needs --platform-id/);
  failedWith(badPlatform, /--platform-id must be a whole number/);
  failedWith(unknown, /^skyport: product no-such-product: Permission Denied.*\[403\]$/);
  assert.equal(listJson.json.products.length, 2);
});

test('product device add (ids, or a file sent in chunks), list, dev on/off and remove; what was not added fails the command', async () => {
  const { token, home, env } = await user();
  const fleet = await newProduct(server.url, token, 'Trackers');
  const other = await newProduct(server.url, token, 'Elsewhere');
  const p = fleet.slug;
  const [d1, d2, d3, d4, e1] = await Promise.all([
    provision(server.url, token, fleet.id), provision(server.url, token, fleet.id), provision(server.url, token, fleet.id),
    provision(server.url, token, fleet.id), provision(server.url, token, other.id),
  ]);

  // Out of the product with the CLI (d1) and the API (d2, d3): devices in no product.
  const removed = await skyport(['product', 'device', 'remove', d1.id, '--product', p], { home, env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, new RegExp(`removed ${d1.id} from product ${p}`));
  for (const d of [d2, d3]) assert.equal((await raw(`${server.url}/v1/products/${p}/devices/${d.id}`, { method: 'DELETE', token })).status, 204);
  assert.equal((await raw(`${server.url}/v1/products/${p}/devices/${d1.id}`, { token })).status, 404);

  // By id: two added, one already there, one in another product, one malformed.
  const added = await skyport(['product', 'device', 'add', d1.id, d2.id, d4.id, e1.id, 'not-a-device', '--product', String(fleet.id), '--json'], { home, env });
  failedWith(added, /2 device id\(s\) not added: 1 invalid .*, 1 nonmember/);
  assert.deepEqual(added.json.updatedDeviceIds.sort(), [d1.id, d2.id].sort());
  assert.equal(added.json.updated, 2);
  assert.deepEqual(added.json.existingDeviceIds, [d4.id]);
  assert.deepEqual(added.json.nonmemberDeviceIds, [e1.id]);
  assert.deepEqual(added.json.invalidDeviceIds, ['not-a-device']);
  assert.deepEqual(added.json.protectedDeviceIds, []);

  // A file of 2,500 ids goes in three requests, and the answers are added up.
  const unknown = Array.from({ length: 2499 }, () => randomBytes(12).toString('hex'));
  const file = join(home, 'ids.txt');
  await writeFile(file, [d3.id, ...unknown.slice(0, 1200), d3.id.toUpperCase(), ...unknown.slice(1200)].join('\n') + '\n\n');
  const fromFile = await skyport(['product', 'device', 'add', '--file', file, '--product', p], { home, env });
  failedWith(fromFile, /2499 device id\(s\) not added: 2499 invalid/);
  assert.match(fromFile.stdout, new RegExp(`^1 of 2500 device id\\(s\\) added to product ${p}$`, 'm'));
  assert.match(fromFile.stdout, new RegExp(`^updated\\s+${d3.id}$`, 'm'));
  assert.equal(fromFile.stdout.split('\n').filter((l) => l.startsWith('invalid ')).length, 2499);
  assert.equal((await raw(`${server.url}/v1/products/${p}/devices/${d3.id}`, { token })).status, 200);

  // Everything added: exit 0, and the result table.
  const clean = await skyport(['product', 'device', 'add', d4.id, '--product', p], { home, env });
  assert.equal(clean.code, 0, clean.stderr);
  assert.match(clean.stdout, /^0 of 1 device id\(s\) added/m);
  assert.match(clean.stdout, new RegExp(`^RESULT\\s+DEVICE ID\\nexisting\\s+${d4.id}$`, 'm'));

  const empty = join(home, 'empty.txt');
  await writeFile(empty, ' \n\n');
  const badInputs = await Promise.all([
    skyport(['product', 'device', 'add', '--file', join(home, 'missing.txt'), '--product', p], { home, env }),
    skyport(['product', 'device', 'add', '--file', empty, '--product', p], { home, env }),
    skyport(['product', 'device', 'add', d4.id, '--file', empty, '--product', p], { home, env }),
    skyport(['product', 'device', 'add', '--product', p], { home, env }),
    skyport(['product', 'device', 'add', d4.id], { home, env }),
    skyport(['product', 'device', 'list', '--product', 'nope-nope'], { home, env }),
    skyport(['product', 'device', 'list', '--product', p, '--page', 'two'], { home, env }),
    skyport(['product', 'device', 'list', '--product', p, '--sort-dir', 'up'], { home, env }),
    skyport(['product', 'device', 'dev', 'maybe', d4.id, '--product', p], { home, env }),
    skyport(['product', 'device', 'remove', e1.id, '--product', p], { home, env }),
  ]);
  const [missing, emptyFile, both, neither, twoProducts, unknownProduct, badPage, badDir, badMode, notMember] = badInputs;
  failedWith(missing, /cannot read --file .*missing\.txt: ENOENT/);
  failedWith(emptyFile, /--file .*empty\.txt holds no device ids/);
  failedWith(both, /device ids or --file, not both/);
  failedWith(neither, /needs device ids or --file/);
  failedWith(twoProducts, /manages 2 products: pass --product/);
  failedWith(unknownProduct, /product nope-nope: Permission Denied.*\[403\]$/);
  failedWith(badPage, /--page must be a whole number/);
  failedWith(badDir, /--sort-dir must be asc or desc/);
  failedWith(badMode, /takes on or off, not "maybe"/);
  failedWith(notMember, /Device not found for this product \[404\]$/);

  const [page, filtered] = await Promise.all([
    skyport(['product', 'device', 'list', '--product', p, '--per-page', '3', '--sort', 'id', '--sort-dir', 'desc'], { home, env }),
    skyport(['product', 'device', 'list', '--product', p, '--id', d4.id.slice(0, 20), '--json'], { home, env }),
  ]);
  assert.equal(page.code, 0, page.stderr);
  assert.match(page.stdout, /^ID\s+NAME\s+ONLINE\s+DEV\s+OWNER\s+FIRMWARE\s+DEVICE OS\s+LAST HEARD\s+GROUPS$/m);
  const shown = page.stdout.split('\n').filter((l) => /^[0-9a-f]{24}\s/.test(l)).map((l) => l.slice(0, 24));
  assert.deepEqual(shown, [d1, d2, d3, d4].map((d) => d.id).sort().reverse().slice(0, 3));
  assert.match(page.stdout, /^page 1 of 2, 4 devices in all$/m);
  assert.deepEqual(filtered.json.devices.map((d: { id: string }) => d.id), [d4.id]);
  assert.equal(filtered.json.meta.total, 1);

  const on = await skyport(['product', 'device', 'dev', 'on', d4.id, '--product', p], { home, env });
  assert.equal(on.code, 0, on.stderr);
  assert.match(on.stdout, /is a development device now/);
  assert.equal((await raw(`${server.url}/v1/products/${p}/devices/${d4.id}`, { token })).json.development, true);
  const off = await skyport(['product', 'device', 'dev', 'off', d4.id, '--product', p, '--json'], { home, env });
  assert.equal(off.json.development, false);
  assert.equal((await raw(`${server.url}/v1/products/${p}/devices/${d4.id}`, { token })).json.development, false);
});

test('product team list, add and remove, on the only product without naming it', async () => {
  const { token, username, home, env } = await user();
  const { slug } = await newProduct(server.url, token, 'Team Fleet');
  const mate = await signUp(server.url);

  const add = await skyport(['product', 'team', 'add', mate.username], { home, env });
  assert.equal(add.code, 0, add.stderr);
  assert.match(add.stdout, new RegExp(`^added ${mate.username.replace('.', '\\.')} to product ${slug}`, 'm'));
  const [list, listJson, nobody] = await Promise.all([
    skyport(['product', 'team', 'list'], { home, env }),
    skyport(['product', 'team', 'list', '--json'], { home, env }),
    skyport(['product', 'team', 'add', email('ghost')], { home, env }),
  ]);
  assert.match(list.stdout, /^USERNAME\s+ROLE\s+MFA$/m);
  assert.match(list.stdout, new RegExp(`^${username.replace('.', '\\.')}\\s+administrator\\s+off$`, 'm'));
  assert.deepEqual(listJson.json.team.map((m: { username: string }) => m.username).sort(), [username, mate.username].sort());
  failedWith(nobody, /\[404\]$/);

  const remove = await skyport(['product', 'team', 'remove', mate.username, '--json'], { home, env });
  assert.equal(remove.code, 0, remove.stderr);
  assert.deepEqual(remove.json, { ok: true, username: mate.username });
  const team = await raw(`${server.url}/v1/products/${slug}/team`, { token: (await signUp(server.url)).token });
  assert.equal(team.status, 403, 'a stranger sees nothing');
  const left = await skyport(['product', 'team', 'list', '--json'], { home, env });
  assert.deepEqual(left.json.team.map((m: { username: string }) => m.username), [username]);
});

test('customer create with client credentials (never a token), list and delete; claim codes for users and customers', async () => {
  const { token, home, env } = await user();
  const product = await newProduct(server.url, token, 'Customer Fleet');
  const p = product.slug;
  const client = async (body: Record<string, string>) => (await raw(`${server.url}/v1/products/${p}/clients`, { method: 'POST', token, json: body })).json.client as { id: string; secret: string };
  const [mobile, web, backEnd] = await Promise.all([
    client({ name: 'Phone', type: 'installed', scope: 'customers:create' }),
    client({ name: 'Web', type: 'web', redirect_uri: 'https://example.com/setup', scope: 'customers:create' }),
    client({ name: 'Server', type: 'installed' }),
  ]);
  const [alice, bob, carol] = [email('alice'), email('bob'), email('carol')];
  // Customer creation takes client credentials, never a token: these runs have none at all.
  const anon = { SKYPORT_API_URL: server.url };
  const [simple, shadow, webOnly] = await Promise.all([
    skyport(['customer', 'create', '--product', p, '--email', alice, '--client-id', mobile.id, '--client-secret', mobile.secret, '--json'], { home, env: anon, input: 'alice password\n' }),
    skyport(['customer', 'create', '--product', String(product.id), '--email', bob, '--shadow'], { home, env: { ...anon, SKYPORT_CLIENT_ID: backEnd.id, SKYPORT_CLIENT_SECRET: backEnd.secret } }),
    skyport(['customer', 'create', '--product', p, '--email', carol, '--client-id', web.id], { home, env: { ...anon, SKYPORT_PASSWORD: 'carol password' } }),
  ]);
  assert.equal(simple.code, 0, simple.stderr);
  assert.equal(simple.json.token_type, 'bearer');
  assert.match(simple.json.refresh_token, /^[0-9a-f]{40}$/);
  const aliceToken = simple.json.access_token as string;
  assert.equal(shadow.code, 0, shadow.stderr);
  assert.match(shadow.stdout, /^access token\s+[0-9a-f]{40}$/m);
  assert.match(shadow.stdout, /^refresh token\s+[0-9a-f]{40}$/m);
  assert.match(shadow.stderr, /not stored anywhere/);
  assert.equal(webOnly.code, 0, webOnly.stderr);
  const login = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username: carol, password: 'carol password', client_id: mobile.id, client_secret: mobile.secret } });
  assert.equal(login.status, 200, 'the password came from SKYPORT_PASSWORD');

  const badInputs = await Promise.all([
    skyport(['customer', 'create', '--product', p, '--email', email()], { home, env }),
    skyport(['customer', 'create', '--product', p, '--email', email(), '--shadow', '--client-id', mobile.id, '--client-secret', 'wrong'], { home, env: anon }),
    skyport(['customer', 'create', '--email', email(), '--shadow', '--client-id', mobile.id, '--client-secret', mobile.secret], { home, env: anon }),
    skyport(['customer', 'create', '--product', p, '--shadow', '--client-id', mobile.id, '--client-secret', mobile.secret], { home, env: anon }),
    skyport(['customer', 'create', '--product', p, '--email', alice, '--shadow', '--client-id', backEnd.id, '--client-secret', backEnd.secret], { home, env: anon }),
    skyport(['customer', 'list', '--product', 'nope-nope'], { home, env }),
    skyport(['claim-code', '--product', p], { home, env }),
  ]);
  const [noClient, wrongSecret, noProduct, noEmail, taken, unknownProduct, userAsCustomer] = badInputs;
  failedWith(noClient, /needs the product client's credentials: --client-id/);
  failedWith(wrongSecret, /invalid_client.*\[40\d\]$/);
  failedWith(noProduct, /customer create needs --product/);
  failedWith(noEmail, /customer create needs --email/);
  failedWith(taken, /already exists.*\[409\]$/);
  failedWith(unknownProduct, /product nope-nope: Permission Denied.*\[403\]$/);
  failedWith(userAsCustomer, /\[403\]$/);

  const [list, listJson, customerCode, customerCodeJson, userCode] = await Promise.all([
    skyport(['customer', 'list'], { home, env }),
    skyport(['customer', 'list', '--product', p, '--per-page', '2', '--json'], { home, env }),
    skyport(['claim-code', '--product', p, '--token', aliceToken], { home, env: anon }),
    skyport(['claim-code', '--product', String(product.id), '--json'], { home, env: { ...anon, SKYPORT_TOKEN: aliceToken } }),
    skyport(['claim-code'], { home, env }),
  ]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^EMAIL\s+SHADOW\s+DEVICES\s+CREATED$/m);
  assert.match(list.stdout, new RegExp(`^${bob.replace('.', '\\.')}\\s+yes\\s+-\\s+\\d{4}-`, 'm'));
  assert.match(list.stdout, new RegExp(`^${alice.replace('.', '\\.')}\\s+no\\s+`, 'm'));
  assert.match(list.stdout, /^page 1 of 1, 3 customers in all$/m);
  assert.equal(listJson.json.customers.length, 2);
  assert.deepEqual(listJson.json.meta, { page: 1, per_page: 2, total: 3, total_pages: 2 });
  assert.equal(customerCode.code, 0, customerCode.stderr);
  assert.match(customerCode.stdout, /^\S{48}\n$/, 'the code alone on stdout');
  assert.match(customerCode.stderr, /Single use/);
  assert.match(customerCodeJson.json.claim_code, /^\S{48}$/);
  assert.deepEqual(customerCodeJson.json.device_ids, []);
  assert.equal(userCode.code, 0, userCode.stderr);
  assert.match(userCode.stdout, /^\S{48}\n$/);

  const deleted = await skyport(['customer', 'delete', alice, '--product', p], { home, env });
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.match(deleted.stdout, new RegExp(`deleted customer ${alice.replace('.', '\\.')} of product ${p}`));
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: aliceToken })).status, 401, 'its tokens are revoked');
  const again = await skyport(['customer', 'delete', alice], { home, env });
  failedWith(again, /\[404\]$/);
});
