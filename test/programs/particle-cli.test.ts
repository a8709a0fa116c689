import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, email, type TestServer } from '../helpers/server.js';
import { PASSWORD, enableMfa, newProduct, signUp } from '../helpers/fixtures.js';
import { provision, type Identity } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { raw } from '../helpers/http.js';
import { ensureParticleCli, particle, PARTICLE_CLI_VERSION, type CliResult } from '../helpers/particle-cli.js';
import { createDevice, type Device, type DeviceEventMessage } from '../../src/sdk/index.js';
import { totpNow } from '../../src/domain/totp.js';

/**
 * The real particle-cli, unchanged, against Skyport (docs/compatibility.md): set up as a user
 * would (`particle config set apiUrl`), it logs in (with MFA too), makes and revokes tokens, lists,
 * calls and reads devices of the device SDK, streams and publishes events, and imports devices
 * into a product. Every command's output is checked.
 */
const install = await ensureParticleCli();
const skip = install.ok ? false : install.reason;
if (!install.ok) console.log(`# skipped: ${install.reason}`);

const URL_RE = (url: string) => url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe(`particle-cli ${PARTICLE_CLI_VERSION}`, { skip }, () => {
  let server: TestServer;
  /** The owner's HOME, logged in as `particle login` leaves it. */
  let home: string;
  const homes: string[] = [];
  const devices: Device[] = [];
  let owner: Awaited<ReturnType<typeof signUp>>;
  let product: { id: number; slug: string };
  let other: { id: number; slug: string };
  /** Online, with functions and variables, the owner's. */
  let lamp: Identity;
  let lampDevice: Device;
  /** In the product, never connected; the owner claims it with `particle cloud claim`. */
  let spare: Identity;

  const cli = (args: string[], options: { home?: string; answers?: Array<[RegExp, string]>; timeoutMs?: number } = {}): Promise<CliResult> => {
    if (!install.ok) throw new Error('particle-cli is not installed');
    return particle(install.entry, args, { ...options, home: options.home ?? home });
  };
  const ok = (r: CliResult, what: string) => assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.out}`);
  const failed = (r: CliResult, what: string) => assert.equal(r.code, 1, `${what} should fail:\n${r.out}`);
  const settingsOf = (h: string) => JSON.parse(readFileSync(join(h, '.particle', 'particle.config.json'), 'utf8')) as Record<string, unknown>;

  /**
   * A HOME pointed at the server as `particle config set apiUrl` leaves it, and logged in as
   * `particle login` leaves it when `login` is given (the first test runs those commands
   * themselves; the others write their file, which saves a second per command).
   */
  async function newHome(login?: { token: string; username: string }): Promise<string> {
    const h = await mkdtemp(join(tmpdir(), 'skyport-particle-home-'));
    homes.push(h);
    await mkdir(join(h, '.particle'));
    const settings = login ? { apiUrl: server.url, access_token: login.token, username: login.username } : { apiUrl: server.url };
    await writeFile(join(h, '.particle', 'particle.config.json'), JSON.stringify(settings));
    return h;
  }

  /** An account with MFA on. Enrolment spends the current code, so its login takes the next one. */
  async function mfaAccount() {
    const account = await signUp(server.url, { username: email('mfa') });
    const secret = await enableMfa(server.url, account.token);
    return { ...account, nextOtp: totpNow(secret, new Date(Date.now() + 30_000)) };
  }

  async function connect(who: Identity): Promise<Device> {
    const dev = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: false });
    devices.push(dev);
    return dev;
  }

  /** Runs a command that waits for an event, and publishes until it has seen it. */
  async function whilePublishing(run: Promise<CliResult>, publish: () => Promise<void>): Promise<CliResult> {
    let finished = false;
    void run.finally(() => { finished = true; });
    while (!finished) {
      await publish();
      await new Promise((r) => setTimeout(r, 200));
    }
    return run;
  }

  before(async () => {
    server = await startTestServer();
    owner = await signUp(server.url, { username: email('owner') });
    home = await newHome(owner);
    product = await newProduct(server.url, owner.token, 'CLI Fleet', 6);
    other = await newProduct(server.url, owner.token, 'Other Fleet', 6);
    lamp = await provision(server.url, owner.token, product.id);
    spare = await provision(server.url, owner.token, product.id);
    lampDevice = await connect(lamp);
    lampDevice
      .function('led', (arg) => (arg === 'on' ? 1 : 0))
      .function('echo', (arg) => arg.length)
      .variable('temp', 'double', () => 21.5)
      .variable('label', 'string', () => 'hall');
    await lampDevice.connect({ timeoutMs: 5000 });
    const claimed = await raw(`${server.url}/v1/devices`, { method: 'POST', token: owner.token, json: { id: lamp.id } });
    assert.equal(claimed.status, 200, claimed.text);
  });

  after(async () => {
    await Promise.all(devices.map((d) => d.close()));
    await server?.close();
    await Promise.all(homes.map((h) => rm(h, { recursive: true, force: true })));
  });

  test('config set apiUrl, login, whoami, login --token, logout', async (t) => {
    t.diagnostic(install.ok ? `particle-cli ${PARTICLE_CLI_VERSION} in ${install.dir}${install.installedMs === null ? ' (cached)' : ` (installed in ${(install.installedMs / 1000).toFixed(1)} s)`}` : '');
    const h = await mkdtemp(join(tmpdir(), 'skyport-particle-home-'));
    homes.push(h);
    ok(await cli(['config', 'set', 'apiUrl', server.url], { home: h }), 'config set apiUrl');
    const shown = await cli(['config'], { home: h });
    ok(shown, 'config');
    assert.match(shown.out, new RegExp(`Using API: ${URL_RE(server.url)}\\n`));

    const wrong = await cli(['login', '--username', owner.username, '--password', 'wrong horse'], { home: h });
    failed(wrong, 'login with a wrong password');
    assert.match(wrong.out, /There was an error logging you in!/);
    assert.match(wrong.out, /User credentials are invalid/);

    const login = await cli(['login', '--username', owner.username, '--password', PASSWORD], { home: h });
    ok(login, 'login');
    assert.match(login.out, /> Successfully completed login!/);
    const token = settingsOf(h).access_token as string;
    assert.match(token, /^[0-9a-f]{40}$/);
    assert.equal(settingsOf(h).username, owner.username);
    const who = await cli(['whoami'], { home: h });
    ok(who, 'whoami');
    assert.match(who.out, new RegExp(`> ${URL_RE(owner.username)}\\n`));

    // The token the CLI saved is a 90-day token of particle-cli 3.43's client.
    const current = await raw(`${server.url}/v1/access_tokens/current`, { token });
    assert.equal(current.json.client, 'CLI2');
    assert.ok(Math.abs(Date.parse(current.json.expires_at as string) - Date.now() - 7776000_000) < 60_000, current.text);

    const logout = await cli(['logout'], { home: h });
    ok(logout, 'logout');
    assert.match(logout.out, new RegExp(`> You have been logged out from ${URL_RE(owner.username)}`));
    assert.equal(settingsOf(h).access_token, null);
    assert.equal(settingsOf(h).username, null);
    assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 401, 'logout revokes the token');

    // login --token checks the token with GET /v1/user and keeps it.
    const viaToken = await cli(['login', '--token', owner.token], { home: h });
    ok(viaToken, 'login --token');
    assert.match(viaToken.out, /> Successfully completed login!/);
    assert.equal(settingsOf(h).access_token, owner.token);
    assert.equal(settingsOf(h).username, owner.username);
  });

  test('login with MFA: the --otp flag, the prompts, and a wrong code', async () => {
    const [flagged, prompted] = await Promise.all([mfaAccount(), mfaAccount()]);
    const [h1, h2] = await Promise.all([newHome(), newHome()]);

    const [viaFlags, viaPrompts] = await Promise.all([
      cli(['login', '--username', flagged.username, '--password', PASSWORD, '--otp', flagged.nextOtp], { home: h1 }),
      cli(['login'], {
        home: h2,
        answers: [[/Please enter your email address/, prompted.username], [/Please enter your password/, PASSWORD], [/Please enter a login code/, prompted.nextOtp]],
      }),
    ]);
    ok(viaFlags, 'login --otp');
    assert.match(viaFlags.out, /Use your authenticator app on your mobile device to get a login code\./);
    assert.match(viaFlags.out, /> Successfully completed login!/);
    assert.equal(settingsOf(h1).username, flagged.username);
    ok(viaPrompts, 'login with prompts');
    assert.match(viaPrompts.out, /> Successfully completed login!/);
    assert.equal(settingsOf(h2).username, prompted.username);

    // The same code again is a replay, refused as a wrong code.
    const replay = await cli(['login', '--username', flagged.username, '--password', PASSWORD, '--otp', flagged.nextOtp], { home: h1 });
    failed(replay, 'login with a used code');
    assert.match(replay.out, /This login code didn't work\./);
    assert.match(replay.out, /The one-time password is invalid/);
  });

  test('token create (--expires-in, --never-expires, default, with MFA) and token revoke', async () => {
    const password: Array<[RegExp, string]> = [[/Please enter your password/, PASSWORD]];
    const [hour, never, standard, wrong] = await Promise.all([
      cli(['token', 'create', '--expires-in', '3600'], { answers: password }),
      cli(['token', 'create', '--never-expires'], { answers: password }),
      cli(['token', 'create'], { answers: password }),
      cli(['token', 'create'], { answers: [[/Please enter your password/, 'wrong horse']] }),
    ]);
    const tokenOf = (r: CliResult) => {
      const m = /\n {4}([0-9a-f]{40})\n/.exec(r.out);
      assert.ok(m, `a token in:\n${r.out}`);
      return m[1]!;
    };
    const expiry = async (tok: string) => (await raw(`${server.url}/v1/access_tokens/current`, { token: tok })).json as { expires_at: string | null; client: string };

    for (const [r, name] of [[hour, '--expires-in'], [never, '--never-expires'], [standard, 'default']] as const) ok(r, `token create ${name}`);
    assert.match(hour.out, /Using account .*\n.*Please enter your password/);
    assert.match(hour.out, /New access token expires on /);
    const hourly = await expiry(tokenOf(hour));
    assert.ok(Math.abs(Date.parse(hourly.expires_at!) - Date.now() - 3600_000) < 60_000, JSON.stringify(hourly));
    assert.equal(hourly.client, 'user', "particle-cli 3.43's token client");
    assert.match(never.out, /New access token never expires/);
    assert.equal((await expiry(tokenOf(never))).expires_at, null);
    assert.match(standard.out, /New access token expires on /);
    assert.ok(Math.abs(Date.parse((await expiry(tokenOf(standard))).expires_at!) - Date.now() - 7776000_000) < 60_000);
    failed(wrong, 'token create with a wrong password');
    assert.match(wrong.out, /Error while creating a new access token: invalid_grant/);

    // With MFA, and nobody logged in: e-mail, password and code are asked. particle-cli 3.43
    // starts with the `user` client and sends the code as `CLI2` (what Skyport had to accept).
    const mfa = await mfaAccount();
    const fresh = await newHome();
    const withMfa = await cli(['token', 'create', '--expires-in', '600'], {
      home: fresh,
      answers: [[/Please enter your email address/, mfa.username], [/Please enter your password/, PASSWORD], [/Please enter a login code/, mfa.nextOtp]],
    });
    ok(withMfa, 'token create with MFA');
    const mfaToken = await expiry(tokenOf(withMfa));
    assert.equal(mfaToken.client, 'user');
    assert.ok(Math.abs(Date.parse(mfaToken.expires_at!) - Date.now() - 600_000) < 60_000, 'the lifetime asked before the code');

    // Revoke: several at once, then an unknown one, then the CLI's own without --force.
    const revoked = await cli(['token', 'revoke', tokenOf(hour), tokenOf(never)]);
    ok(revoked, 'token revoke');
    assert.match(revoked.out, /Successfully revoked all provided tokens/);
    assert.equal((await raw(`${server.url}/v1/user`, { token: tokenOf(hour) })).status, 401);
    assert.equal((await raw(`${server.url}/v1/user`, { token: tokenOf(never) })).status, 401);
    assert.equal((await raw(`${server.url}/v1/user`, { token: tokenOf(standard) })).status, 200);
    const unknown = await cli(['token', 'revoke', tokenOf(hour)]);
    assert.match(unknown.out, new RegExp(`Failed to revoke the following access tokens:\\n {2}token: ${tokenOf(hour)}; reason: The access token provided is invalid\\.`));
    const own = await cli(['token', 'revoke', owner.token]);
    assert.match(own.out, /is this CLI's access token\nuse --force to delete it/);
    assert.equal((await raw(`${server.url}/v1/user`, { token: owner.token })).status, 200);
  });

  test('cloud claim, device rename, list, call, get, nyan, device remove with devices of the SDK', async () => {
    const claimed = await cli(['cloud', 'claim', spare.id]);
    ok(claimed, 'cloud claim');
    assert.match(claimed.out, new RegExp(`Claiming device ${spare.id}\\nSuccessfully claimed device ${spare.id}\\n`));

    const renamed = await cli(['device', 'rename', lamp.id, 'cli-lamp']);
    ok(renamed, 'device rename');
    assert.match(renamed.out, new RegExp(`Successfully renamed device ${lamp.id} to: cli-lamp\\n`));

    const list = await cli(['list']);
    ok(list, 'list');
    assert.match(list.out, new RegExp(`cli-lamp \\[${lamp.id}\\] \\(Product ${product.id}\\) is online\\n  Variables:\\n    temp \\(double\\)\\n    label \\(string\\)\\n  Functions:\\n    int led \\(String args\\) \\n    int echo \\(String args\\) \\n`));
    assert.match(list.out, new RegExp(`<no name> \\[${spare.id}\\] \\(Product ${product.id}\\) is offline\\n`));

    const [on, echo, unknownFn, offline, temp, label, unknownVar] = await Promise.all([
      cli(['call', 'cli-lamp', 'led', 'on']),
      cli(['call', lamp.id, 'echo', 'hello world']),
      cli(['call', lamp.id, 'nope']),
      cli(['call', spare.id, 'led', 'on']),
      cli(['get', 'cli-lamp', 'temp']),
      cli(['get', lamp.id, 'label']),
      cli(['get', lamp.id, 'nope']),
    ]);
    ok(on, 'call led on');
    assert.equal(on.out.trim(), '1');
    assert.equal(echo.out.trim(), '11', 'the argument arrives whole');
    failed(unknownFn, 'call of an unknown function');
    assert.match(unknownFn.out, /Function call failed: Function `nope` not found: HTTP error 404 .* - The device has no function "nope"/);
    failed(offline, 'call of an offline device');
    assert.match(offline.out, /HTTP error 404 .* - The device is not connected to the cloud/);
    ok(temp, 'get temp');
    assert.equal(temp.out.trim(), '21.5');
    assert.equal(label.out.trim(), 'hall');
    failed(unknownVar, 'get of an unknown variable');
    assert.match(unknownVar.out, /Error: Variable not found\nError while reading value: Some variables could not be read/);

    const signals: boolean[] = [];
    lampDevice.onSignal((v) => signals.push(v));
    ok(await cli(['cloud', 'nyan', lamp.id, 'on']), 'cloud nyan');
    await eventually(() => (signals[0] === true ? true : undefined));

    const removed = await cli(['device', 'remove', spare.id], { answers: [[/Are you sure you want to release ownership of this device\?/, 'y']] });
    ok(removed, 'device remove');
    assert.match(removed.out, new RegExp(`releasing device ${spare.id}\\nOkay!`));
    const mine = (await raw(`${server.url}/v1/devices`, { token: owner.token })).json as Array<{ id: string }>;
    assert.deepEqual(mine.map((d) => d.id), [lamp.id]);
  });

  test('subscribe shows what a connected device publishes; publish reaches the devices', async () => {
    // `particle subscribe` reads the caller's stream (/v1/devices/events/<name>) until --max.
    const seen = await whilePublishing(cli(['subscribe', '--max', '1', 'cli-temp']), () => lampDevice.publish('cli-temp', '21.5', { ttl: 30 }));
    ok(seen, 'subscribe');
    assert.match(seen.out, /Subscribing to "cli-temp" from my devices\n/);
    const line = seen.out.split('\n').find((l) => l.startsWith('{'));
    assert.ok(line, seen.out);
    const event = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual({ ...event, published_at: undefined }, { name: 'cli-temp', data: '21.5', ttl: 30, coreid: lamp.id, productID: product.id, published_at: undefined });
    assert.match(seen.out, /1 event\(s\) received\. Exiting\.\.\./);

    const [fleet, one] = await Promise.all([
      whilePublishing(cli(['subscribe', '--product', String(product.id), '--max', '1', 'cli-fleet']), () => lampDevice.publish('cli-fleet', 'f')),
      whilePublishing(cli(['subscribe', '--device', lamp.id, '--max', '1']), () => lampDevice.publish('cli-one', 'd')),
    ]);
    ok(fleet, 'subscribe --product');
    assert.match(fleet.out, new RegExp(`Subscribing to "cli-fleet" from product ${product.id}'s stream\\n[^]*"coreid":"${lamp.id}"`));
    ok(one, 'subscribe --device');
    assert.match(one.out, new RegExp(`Subscribing to all events from device ${lamp.id}'s stream\\n[^]*"coreid":"${lamp.id}"`));

    // particle publish sends a private event to the caller's devices, and with --product to the fleet.
    const received: DeviceEventMessage[] = [];
    lampDevice.subscribe('cli/#', (e) => received.push(e));
    const published = await cli(['publish', 'cli/hello', 'world']);
    ok(published, 'publish');
    assert.match(published.out, /Published private event: cli\/hello\n/);
    const toFleet = await cli(['publish', '--product', String(product.id), 'cli/fleet', 'all']);
    ok(toFleet, 'publish --product');
    assert.match(toFleet.out, new RegExp(`Published private event: cli/fleet to product: ${product.id}\\n`));
    await eventually(() => (received.length >= 2 ? true : undefined));
    assert.deepEqual(received.map((e) => [e.name, e.data, e.coreid]).sort(), [['cli/fleet', 'all', 'api'], ['cli/hello', 'world', 'api']]);
  });

  test('product device list, remove, and add (one id, and a --file of ids)', async () => {
    const [list, json, detail] = await Promise.all([
      cli(['product', 'device', 'list', String(product.id)]),
      cli(['product', 'device', 'list', String(product.id), '--json']),
      cli(['product', 'device', 'list', product.slug, lamp.id]),
    ]);
    ok(list, 'product device list');
    assert.match(list.out, new RegExp(`\\[${lamp.id}\\] \\(Product ${product.id}\\) is online`));
    assert.match(list.out, new RegExp(`\\[${spare.id}\\] \\(Product ${product.id}\\) is offline`));
    ok(json, 'product device list --json');
    const parsed = JSON.parse(json.out) as { meta: Record<string, unknown>; data: Array<{ id: string; product_id: number; online: boolean }> };
    assert.deepEqual(parsed.meta, { version: '1.0.0', previous: 0, current: 1, next: 2 });
    assert.deepEqual(parsed.data.map((d) => [d.id, d.product_id]).sort(), [[lamp.id, product.id], [spare.id, product.id]].sort());
    ok(detail, 'product device list <product> <device>');
    assert.match(detail.out, new RegExp(`\\[${lamp.id}\\] \\(Product ${product.id}\\) is online\\n  Variables:\\n    temp \\(double\\)`));

    // Out of the product, then back in with one id: the CLI uploads it as a multipart file.
    const removed = await cli(['product', 'device', 'remove', String(product.id), spare.id]);
    ok(removed, 'product device remove');
    assert.match(removed.out, new RegExp(`Success! Removed device ${spare.id} from product ${product.id}`));
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${spare.id}`, { token: owner.token })).status, 404);
    const added = await cli(['product', 'device', 'add', String(product.id), spare.id]);
    ok(added, 'product device add');
    assert.match(added.out, new RegExp(`Success!\\n\\nProduct ${product.id} Includes:\\n  ${spare.id}\\n`));
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${spare.id}`, { token: owner.token })).status, 200);

    // A file: a device of no product joins; one of another product and a malformed id are skipped.
    const loose = await provision(server.url, owner.token, other.id);
    const elsewhere = await provision(server.url, owner.token, other.id);
    assert.equal((await raw(`${server.url}/v1/products/${other.id}/devices/${loose.id}`, { method: 'DELETE', token: owner.token })).status, 204);
    const file = join(home, 'ids.txt');
    await writeFile(file, `${loose.id}\n${elsewhere.id}\nnot-a-device\n`);
    const fromFile = await cli(['product', 'device', 'add', String(product.id), '--file', file]);
    ok(fromFile, 'product device add --file');
    assert.match(fromFile.out, new RegExp(`Success!\\n\\nProduct ${product.id} Includes:\\n  ${loose.id}\\n\\nSkipped Non-Member IDs:\\n  ${elsewhere.id}\\n\\nSkipped Invalid IDs:\\n  not-a-device\\n`));
    assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${loose.id}`, { token: owner.token })).status, 200);
    assert.equal((await raw(`${server.url}/v1/products/${other.id}/devices/${elsewhere.id}`, { token: owner.token })).status, 200, 'not moved');
  });
});
