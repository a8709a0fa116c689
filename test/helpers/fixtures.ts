import assert from 'node:assert/strict';
import { email } from './server.js';
import { particle } from './particle.js';
import { raw } from './http.js';
import { totpNow } from '../../src/domain/totp.js';
import { defaultSchema } from '../../src/domain/config/default-schema.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Fixtures the end-to-end tests share: accounts, products, expected failures. */
export const PASSWORD = 'correct horse';

export interface ApiError { statusCode: number; body: Record<string, unknown> }

/** The rejection of a particle-api-js call, which must fail. */
export async function rejection(p: Promise<unknown>): Promise<ApiError> {
  return p.then(() => assert.fail('expected the request to fail'), (e: ApiError) => e);
}

/** A new account, logged in with particle-api-js (`options` go to the client, e.g. tokenDuration). */
export async function signUp(url: string, options: { password?: string; username?: string; client?: Record<string, unknown> } = {}) {
  const password = options.password ?? PASSWORD;
  const username = options.username ?? email();
  const api = particle(url, options.client);
  await api.createUser({ username, password });
  const newToken = async () => (await api.login({ username, password })).body.access_token as string;
  return { api, username, password, token: await newToken(), newToken };
}

/** A product created as particle-cli creates one. */
export async function newProduct(url: string, token: string, name = 'Tracker Fleet', platformId = 26): Promise<{ id: number; slug: string }> {
  const r = await raw(`${url}/v1/user/products`, { method: 'POST', token, json: { product: { name, description: 'trackers', platform_id: platformId } } });
  assert.equal(r.status, 201, r.text);
  return r.json.product as { id: number; slug: string };
}

/** Turns MFA on for the account of `token` through the API (codes of the time `at`, the server's); answers the TOTP secret. */
export async function enableMfa(url: string, token: string, at: () => Date = () => new Date()): Promise<string> {
  const start = await raw(`${url}/v1/user/mfa-enable`, { token });
  const secret = start.json.secret as string;
  const confirm = await raw(`${url}/v1/user/mfa-enable`, { method: 'POST', token, json: { mfa_token: start.json.mfa_token, otp: totpNow(secret, at()) } });
  assert.equal(confirm.status, 200, confirm.text);
  return secret;
}

/**
 * The custom schema example of Particle's tracker documentation (docs/particle-compatibility.md#custom-schemas): the default schema plus an `engine` module with an idle
 * speed and a publish period in milliseconds (and `extra` settings for a test's own needs).
 */
export function engineSchema(extra: Record<string, unknown> = {}): Json {
  const s = defaultSchema() as Json;
  s.properties.engine = {
    $id: '#/properties/engine', type: 'object', title: 'Engine', description: 'CAN demo engine settings', default: {},
    properties: {
      idle: { type: 'integer', title: 'Idle RPM speed', description: '', default: 1600, minimum: 0, maximum: 10000 },
      fastpub: { type: 'integer', title: 'Publish period when running (milliseconds)', description: '', default: 0, minimum: 0, maximum: 3600000 },
      ...extra,
    },
  };
  return s;
}
