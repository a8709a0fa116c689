import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, manualClock, type TestServer } from './helpers/server.js';
import { basic, raw, type RawResponse } from './helpers/http.js';

/**
 * Failed logins and client authentications are limited per account, per client and per source
 * address (docs/particle-compatibility.md#failed-attempts-and-rate-limits; settings LOGIN_MAX_FAILURES, LOGIN_LOCKOUT_SECONDS, IP_MAX_FAILURES,
 * IP_FAILURE_WINDOW_SECONDS). Time moves with a manual clock, never by sleeping.
 */

const PASSWORD = 'correct horse';
const servers: TestServer[] = [];
after(async () => { await Promise.all(servers.map((s) => s.close())); });

async function start(env: Record<string, string>) {
  const clock = manualClock(new Date());
  const server = await startTestServer({ clock, env });
  servers.push(server);
  return { server, clock };
}

async function signUp(server: TestServer): Promise<string> {
  const username = email();
  const r = await raw(`${server.url}/v1/users`, { method: 'POST', json: { username, password: PASSWORD } });
  assert.equal(r.status, 201, r.text);
  return username;
}

function login(server: TestServer, username: string, password: string, from?: string): Promise<RawResponse> {
  return raw(`${server.url}/oauth/token`, {
    method: 'POST',
    form: { grant_type: 'password', username, password, client_id: 'particle-api', client_secret: 'particle-api' },
    ...(from ? { headers: { 'x-forwarded-for': from } } : {}),
  });
}

/** A 429 rate_limit_exceeded with a Retry-After of 1..max seconds; answers the Retry-After. */
function isLockedOut(r: RawResponse, maxSeconds: number, label: string): number {
  assert.equal(r.status, 429, `${label}: ${r.text}`);
  assert.equal(r.json?.error, 'rate_limit_exceeded', label);
  assert.equal(typeof r.json?.error_description, 'string', label);
  const retryAfter = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= maxSeconds, `${label}: Retry-After ${r.headers.get('retry-after')}`);
  return retryAfter;
}

function isBadPassword(r: RawResponse, label: string): void {
  assert.equal(r.status, 400, `${label}: ${r.text}`);
  assert.equal(r.json?.error, 'invalid_grant', label);
}

test('an account is locked after LOGIN_MAX_FAILURES wrong passwords, even for the right one, until the lock-out passes', async () => {
  const { server, clock } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60' });
  const username = await signUp(server);
  const other = await signUp(server);

  isBadPassword(await login(server, username, 'wrong horse'), 'first failure');
  isBadPassword(await login(server, username, 'wrong horse'), 'second failure');
  isLockedOut(await login(server, username, 'wrong horse'), 60, 'the failure that reaches the limit already says so');
  const first = isLockedOut(await login(server, username, PASSWORD), 60, 'the right password while locked');
  isLockedOut(await login(server, username.toUpperCase(), PASSWORD), 60, 'the username in another letter case');
  assert.equal((await login(server, other, PASSWORD)).status, 200, 'another account from the same address is not locked');

  clock.advance(30_000);
  const later = isLockedOut(await login(server, username, PASSWORD), 60, 'half-way through the lock-out');
  assert.ok(later < first, `Retry-After counts down (${first} then ${later})`);

  clock.advance(31_000);
  const ok = await login(server, username, PASSWORD);
  assert.equal(ok.status, 200, `the right password works once the lock-out has passed: ${ok.text}`);
  assert.equal(typeof ok.json.access_token, 'string');
  isBadPassword(await login(server, username, 'wrong horse'), 'the count starts again after a lock-out');
});

test('a successful login resets the count of failures', async () => {
  const { server } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60' });
  const username = await signUp(server);
  for (let round = 0; round < 3; round++) {
    isBadPassword(await login(server, username, 'wrong horse'), `round ${round}, failure 1`);
    isBadPassword(await login(server, username, 'wrong horse'), `round ${round}, failure 2`);
    assert.equal((await login(server, username, PASSWORD)).status, 200, `round ${round}: the right password`);
  }
});

test('an unknown username locks out like a known one, so the answers do not tell which accounts exist', async () => {
  const { server } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60' });
  const known = await signUp(server);
  const unknown = email('nobody');
  const answers = async (username: string) => {
    const out: Array<[number, string]> = [];
    for (let i = 0; i < 4; i++) {
      const r = await login(server, username, 'wrong horse');
      out.push([r.status, r.json?.error]);
    }
    return out;
  };
  const forKnown = await answers(known);
  assert.deepEqual(await answers(unknown), forKnown);
  assert.deepEqual(forKnown.map(([s]) => s), [400, 400, 429, 429]);
});

test('a source address is limited to IP_MAX_FAILURES failures, spread over any usernames, within the window', async () => {
  const { server, clock } = await start({ IP_MAX_FAILURES: '5', IP_FAILURE_WINDOW_SECONDS: '300', TRUST_PROXY: 'loopback' });
  const users = [await signUp(server), await signUp(server), await signUp(server)];
  const attacker = '203.0.113.7';
  const bystander = '198.51.100.2';

  // Five failures over four usernames (one unknown): none reaches the per-account limit of 10.
  isBadPassword(await login(server, users[0] as string, 'wrong', attacker), 'failure 1');
  isBadPassword(await login(server, users[1] as string, 'wrong', attacker), 'failure 2');
  isBadPassword(await login(server, users[2] as string, 'wrong', attacker), 'failure 3');
  isBadPassword(await login(server, email('nobody'), 'wrong', attacker), 'failure 4 (unknown username)');
  isLockedOut(await login(server, users[0] as string, 'wrong', attacker), 300, 'failure 5 reaches the limit');

  isLockedOut(await login(server, users[1] as string, PASSWORD, attacker), 300, 'even the right password from that address');
  isLockedOut(await login(server, email('fresh'), PASSWORD, attacker), 300, 'any username from that address');
  assert.equal((await login(server, users[1] as string, PASSWORD, bystander)).status, 200, 'another address logs in');

  clock.advance(301_000);
  assert.equal((await login(server, users[1] as string, PASSWORD, attacker)).status, 200, 'the address may try again after the window');
});

test('failed client authentications count towards the address limit too', async () => {
  const { server } = await start({ IP_MAX_FAILURES: '3', TRUST_PROXY: 'loopback' });
  const username = await signUp(server);
  const from = '203.0.113.9';
  for (let i = 0; i < 3; i++) {
    const r = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials', client_id: `no-such-client-${i}`, client_secret: 'x' }, headers: { 'x-forwarded-for': from } });
    assert.equal(r.json?.error, 'invalid_client', r.text);
  }
  isLockedOut(await login(server, username, PASSWORD, from), 300, 'a login from that address');
});

test('a client is locked for an address after LOGIN_MAX_FAILURES wrong secrets from it, even for the right one, until the lock-out passes', async () => {
  const { server, clock } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60', TRUST_PROXY: 'loopback' });
  const username = await signUp(server);
  const token = (await login(server, username, PASSWORD)).json.access_token as string;
  const made = await raw(`${server.url}/v1/clients`, { method: 'POST', token, json: { name: 'server app' } });
  assert.equal(made.status, 201, made.text);
  const { id, secret } = made.json.client as { id: string; secret: string };
  const grant = (clientSecret: string, viaBasic = false, from = '203.0.113.20') => raw(`${server.url}/oauth/token`, viaBasic
    ? { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(id, clientSecret), 'x-forwarded-for': from } }
    : { method: 'POST', form: { grant_type: 'client_credentials', client_id: id, client_secret: clientSecret }, headers: { 'x-forwarded-for': from } });

  assert.equal((await grant(secret)).status, 200, 'the right secret works');
  for (const [i, viaBasic] of [false, true, false].entries()) {
    const r = await grant('wrong secret', viaBasic);
    assert.ok(r.status === 400 || r.status === 429, `failure ${i + 1}: ${r.text}`);
    assert.ok(['invalid_client', 'rate_limit_exceeded'].includes(r.json?.error), `failure ${i + 1}: ${r.text}`);
  }
  isLockedOut(await grant(secret), 60, 'the right secret while locked');
  isLockedOut(await grant(secret, true), 60, 'the right secret with Basic while locked');
  assert.equal((await login(server, username, PASSWORD, '198.51.100.3')).status, 200, 'the account itself is not locked');
  assert.equal((await grant(secret, false, '198.51.100.5')).status, 200, 'the client still works from other addresses: knowing its ID is not enough to stop it');

  clock.advance(61_000);
  const ok = await grant(secret);
  assert.equal(ok.status, 200, `the right secret works once the lock-out has passed: ${ok.text}`);
});

test('wrong secrets for a public client (published secret) lock that address only, not every user of the client', async () => {
  const { server, clock } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60', TRUST_PROXY: 'loopback' });
  const username = await signUp(server);
  const attacker = '203.0.113.10';
  for (let i = 0; i < 3; i++) {
    await raw(`${server.url}/oauth/token`, {
      method: 'POST',
      form: { grant_type: 'password', username, password: PASSWORD, client_id: 'particle-api', client_secret: 'guess' },
      headers: { 'x-forwarded-for': attacker },
    });
  }
  isLockedOut(await login(server, username, PASSWORD, attacker), 60, 'the address that sent wrong secrets');
  assert.equal((await login(server, username, PASSWORD, '198.51.100.4')).status, 200, 'everybody else still logs in with particle-api');
  clock.advance(61_000);
  assert.equal((await login(server, username, PASSWORD, attacker)).status, 200, 'and the address too, after the lock-out');
});
