import assert from 'node:assert/strict';
import { email } from './server.js';
import { particle } from './particle.js';
import { raw } from './http.js';

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
