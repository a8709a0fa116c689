import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { enableMfa, newProduct, signUp } from '../helpers/fixtures.js';
import { cliHome, failedWith, skyport } from '../helpers/cli.js';
import { totpNow } from '../../src/domain/totp.js';

/** The skyport CLI: `token create|current|revoke` and `client list|create|update|delete`. */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });


test('token create prints a new token without touching the profile; current describes it; revoke needs only the token', async () => {
  const { username, password } = await signUp(server.url);
  const home = await cliHome();
  // A profile already logged in elsewhere keeps its token.
  await mkdir(join(home, 'config'), { recursive: true });
  const profiles = JSON.stringify({ current: 'default', profiles: { default: { apiUrl: server.url, token: 'f'.repeat(40), username } } });
  await writeFile(join(home, 'config', 'profiles.json'), profiles, { mode: 0o600 });

  const [made, forever] = await Promise.all([
    skyport(['token', 'create', '-u', username, '--expires-in', '3600'], { home, input: `${password}\n` }),
    skyport(['token', 'create', '--never-expires', '--json'], { home, input: `${username}\n${password}\n` }),
  ]);
  assert.equal(made.code, 0, made.stderr);
  const token = made.stdout.trim();
  assert.match(token, /^[0-9a-f]{40}$/, 'the token alone on stdout');
  assert.match(made.stderr, /expires at \d{4}-.*not stored in the profile/);
  assert.equal(await readFile(join(home, 'config', 'profiles.json'), 'utf8'), profiles, 'the profile is untouched');
  const described = await raw(`${server.url}/v1/access_tokens/current`, { token });
  assert.equal(described.status, 200);
  const lifetime = (Date.parse(described.json.expires_at) - Date.now()) / 1000;
  assert.ok(lifetime > 3000 && lifetime <= 3600, `expires in an hour, not ${lifetime}s`);

  assert.equal(forever.code, 0, forever.stderr);
  assert.equal(forever.json.expires_in, 0, 'the API\'s answer with --json');
  assert.equal(forever.json.token_type, 'bearer');

  const env = { SKYPORT_TOKEN: forever.json.access_token as string };
  const [current, currentJson] = await Promise.all([
    skyport(['token', 'current'], { home, env }),
    skyport(['token', 'current', '--json'], { home, env }),
  ]);
  assert.equal(current.code, 0, current.stderr);
  assert.match(current.stdout, /^client\s+skyport-cli$/m);
  assert.match(current.stdout, /^scopes\s+full$/m);
  assert.match(current.stdout, /^expires at\s+never$/m);
  assert.equal(currentJson.json.expires_at, null);
  assert.equal(currentJson.json.client_id, 'skyport-cli');

  // Revoking needs no login: the token in the path is the credential.
  const revoked = await skyport(['token', 'revoke', token, '--api-url', server.url], { home: await cliHome() });
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 401, 'the token is revoked');
  const again = await skyport(['token', 'revoke', token, '--api-url', server.url], { home: await cliHome() });
  failedWith(again, /invalid_token.*\[401\]$/);
  // The profile's own token, revoked, is forgotten.
  const home2 = await cliHome();
  await mkdir(join(home2, 'config'), { recursive: true });
  await writeFile(join(home2, 'config', 'profiles.json'), JSON.stringify({ current: 'default', profiles: { default: { apiUrl: server.url, token: env.SKYPORT_TOKEN, username } } }), { mode: 0o600 });
  const own = await skyport(['token', 'revoke', env.SKYPORT_TOKEN, '--json'], { home: home2 });
  assert.equal(own.code, 0, own.stderr);
  assert.deepEqual(own.json, { ok: true });
  assert.equal((await raw(`${server.url}/v1/user`, { token: env.SKYPORT_TOKEN })).status, 401);
  const saved = JSON.parse(await readFile(join(home2, 'config', 'profiles.json'), 'utf8'));
  assert.deepEqual(saved.profiles.default, { apiUrl: server.url, username });
});

test('token create asks for the code with MFA on; bad lifetimes fail before any prompt', async () => {
  const { username, password, token } = await signUp(server.url);
  const secret = await enableMfa(server.url, token);
  const home = await cliHome();
  const env = { SKYPORT_API_URL: server.url };
  const [mfa, both, word, zero] = await Promise.all([
    skyport(['token', 'create', '-u', username], { home, env, input: `${password}\n${totpNow(secret, new Date(Date.now() + 30_000))}\n` }),
    skyport(['token', 'create', '--expires-in', '60', '--never-expires'], { home, env }),
    skyport(['token', 'create', '--expires-in', 'soon'], { home, env }),
    skyport(['token', 'create', '--expires-in', '0'], { home, env }),
  ]);
  assert.equal(mfa.code, 0, mfa.stderr);
  assert.equal((await raw(`${server.url}/v1/user`, { token: mfa.stdout.trim() })).status, 200);
  failedWith(both, /--expires-in or --never-expires, not both/);
  failedWith(word, /--expires-in must be a whole number/);
  failedWith(zero, /--never-expires/);
  const none = await skyport(['token', 'current'], { home, env });
  failedWith(none, /not logged in/);
});

test('client create maps each console kind to the API\'s type and scope, prints the secret once, and lists, updates and deletes', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url };
  const p = product.slug;
  const [web, mobile, server2, mine] = await Promise.all([
    skyport(['client', 'create', '--name', 'Setup Page', '--kind', 'simple-web', '--redirect-uri', 'https://example.com/setup', '--product', p, '--json'], { home, env }),
    skyport(['client', 'create', '--name', 'Phone App', '--kind', 'simple-mobile', '--product', String(product.id), '--json'], { home, env }),
    skyport(['client', 'create', '--name', 'Back End', '--kind', 'two-legged', '--product', p, '--json'], { home, env }),
    skyport(['client', 'create', '--name', 'My Script'], { home, env }),
  ]);
  for (const r of [web, mobile, server2, mine]) {
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Store the secret now/, 'the warning goes to stderr');
  }
  assert.equal(web.json.client.type, 'web');
  assert.equal(web.json.client.scope, 'customers:create');
  assert.equal(web.json.client.redirect_uri, 'https://example.com/setup');
  assert.equal(mobile.json.client.type, 'installed');
  assert.equal(mobile.json.client.scope, 'customers:create');
  assert.equal(server2.json.client.type, 'installed');
  assert.equal(server2.json.client.scope, null, 'two-legged: full scope');
  assert.match(server2.json.client.secret, /^[0-9a-f]{40}$/);
  assert.match(mine.stdout, /^secret\s+[0-9a-f]{40}$/m, 'the secret, once, for people too');
  const mineId = /^id\s+(\S+)$/m.exec(mine.stdout)?.[1];
  assert.ok(mineId, mine.stdout);

  // The two-legged client mints customer tokens; the simple-mobile one may only create customers.
  const shadow = await raw(`${server.url}/v1/products/${p}/customers`, { method: 'POST', form: { email: 'shadow@example.com', no_password: 'true', client_id: server2.json.client.id, client_secret: server2.json.client.secret } });
  assert.equal(shadow.status, 201, shadow.text);
  const minted = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials', scope: 'customer=shadow@example.com', client_id: server2.json.client.id, client_secret: server2.json.client.secret } });
  assert.equal(minted.status, 200, minted.text);
  const narrow = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials', scope: 'customer=shadow@example.com', client_id: mobile.json.client.id, client_secret: mobile.json.client.secret } });
  assert.notEqual(narrow.status, 200, 'a simple-mobile client cannot mint customer tokens');

  const [list, userList] = await Promise.all([
    skyport(['client', 'list', '--product', p], { home, env }),
    skyport(['client', 'list', '--json'], { home, env }),
  ]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+NAME\s+KIND\s+TYPE\s+SCOPE\s+REDIRECT URI$/m);
  assert.match(list.stdout, new RegExp(`^${web.json.client.id}\\s+Setup Page\\s+simple-web\\s+web\\s+customers:create\\s+https://example.com/setup$`, 'm'));
  assert.match(list.stdout, new RegExp(`^${mobile.json.client.id}\\s+Phone App\\s+simple-mobile\\s+installed\\s+customers:create\\s+-$`, 'm'));
  assert.match(list.stdout, new RegExp(`^${server2.json.client.id}\\s+Back End\\s+two-legged\\s+installed\\s+full\\s+-$`, 'm'));
  assert.doesNotMatch(list.stdout, /[0-9a-f]{40}/, 'no secrets');
  assert.deepEqual(userList.json.clients.map((c: { id: string }) => c.id), [mineId], 'your account\'s clients without --product');
  assert.equal(userList.json.clients[0].secret, undefined);

  const [renamed, widened] = await Promise.all([
    skyport(['client', 'update', mineId, '--name', 'Renamed'], { home, env }),
    skyport(['client', 'update', mobile.json.client.id, '--scope', '*:*', '--product', p, '--json'], { home, env }),
  ]);
  assert.equal(renamed.code, 0, renamed.stderr);
  assert.match(renamed.stdout, /^name\s+Renamed$/m);
  assert.equal(widened.json.client.scope, null);

  const gone = await skyport(['client', 'delete', web.json.client.id, '--product', p], { home, env });
  assert.equal(gone.code, 0, gone.stderr);
  assert.match(gone.stdout, /deleted client .* tokens it made are revoked/);
  const after = await raw(`${server.url}/v1/products/${p}/clients`, { token });
  assert.deepEqual(after.json.clients.map((c: { id: string }) => c.id).sort(), [mobile.json.client.id, server2.json.client.id].sort());
});

test('client: a wrong kind, missing flags, kinds without a product, and an unknown product or client each fail with one line', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const home = await cliHome();
  const env = { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url };
  const p = product.slug;
  const results = await Promise.all([
    skyport(['client', 'create', '--name', 'X', '--kind', 'desktop', '--product', p], { home, env }),
    skyport(['client', 'create', '--kind', 'two-legged', '--product', p], { home, env }),
    skyport(['client', 'create', '--name', 'X', '--kind', 'simple-web', '--product', p], { home, env }),
    skyport(['client', 'create', '--name', 'X', '--kind', 'simple-mobile'], { home, env }),
    skyport(['client', 'create', '--name', 'X', '--kind', 'two-legged', '--scope', 'customers:create', '--product', p], { home, env }),
    skyport(['client', 'create', '--name', 'X', '--kind', 'simple-mobile', '--redirect-uri', 'https://example.com', '--product', p], { home, env }),
    skyport(['client', 'list', '--product', 'no-such-product'], { home, env }),
    skyport(['client', 'update', 'nope-1234', '--name', 'Y', '--product', p], { home, env }),
    skyport(['client', 'update', 'nope-1234', '--product', p], { home, env }),
    skyport(['client', 'create', '--name', 'X', '--scope', 'everything'], { home, env }),
  ]);
  const [kind, noName, noRedirect, noProduct, scopeAndKind, redirectNotWeb, unknownProduct, unknownClient, nothing, badScope] = results;
  failedWith(kind, /--kind must be one of simple-mobile, simple-web, two-legged, not "desktop"/);
  failedWith(noName, /needs --name/);
  failedWith(noRedirect, /needs --redirect-uri/);
  failedWith(noProduct, /add --product/);
  failedWith(scopeAndKind, /leave --scope out/);
  failedWith(redirectNotWeb, /--redirect-uri is for --kind simple-web only/);
  failedWith(unknownProduct, /^skyport: product no-such-product: Permission Denied: Product not found.*\[403\]$/);
  failedWith(unknownClient, /not_found: Client not found \[404\]$/);
  failedWith(nothing, /needs --name or --scope/);
  failedWith(badScope, /scope must be .*\[400\]$/);
  const left = await raw(`${server.url}/v1/products/${p}/clients`, { token });
  assert.deepEqual(left.json.clients, [], 'nothing was created');
});
