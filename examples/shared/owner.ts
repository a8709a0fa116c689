/**
 * What a product's owner does once, in the console or with the CLI, before any of the designs
 * runs: have an account, a product, an OAuth client of the kind the design needs, and device
 * identities in the product. The examples do it through the API so that they run on their own.
 */
import { randomBytes } from 'node:crypto';
import { api, type TokenResponse } from './api.js';

export interface Product { id: number; slug: string }
export interface OAuthClient { id: string; secret: string }
export interface DeviceIdentity { id: string; secret: string }

/**
 * The owner's access token: the one given (`--token`, or `SKYPORT_TOKEN` as the CLI sets it), or
 * that of a new developer account made for this run (needs sign-up open, the default).
 */
export async function ownerToken(apiUrl: string, token?: string): Promise<string> {
  if (token) return token;
  const username = `example-owner-${randomBytes(4).toString('hex')}@example.com`;
  const password = randomBytes(12).toString('base64url');
  await api(apiUrl, '/v1/users', { json: { username, password } });
  // The password grant with particle-api-js's public client, as `skyport login` does with its own.
  const login = await api<TokenResponse>(apiUrl, '/oauth/token', {
    client: { id: 'particle-api', secret: 'particle-api' },
    form: { grant_type: 'password', username, password },
  });
  return login.access_token;
}

/** The product named (id or slug), or a new one (the caller is its first team member). */
export async function ownerProduct(apiUrl: string, token: string, name: string, product?: string): Promise<Product> {
  if (product) {
    const found = await api<{ product: Product }>(apiUrl, `/v1/products/${encodeURIComponent(product)}`, { token });
    return { id: found.product.id, slug: found.product.slug };
  }
  // platform_id 12: a Wi-Fi device (Argon), which needs the app for its Wi-Fi setup.
  const made = await api<{ product: Product }>(apiUrl, '/v1/user/products', {
    token, json: { product: { name, description: 'Skyport example', platform_id: 12 } },
  });
  return { id: made.product.id, slug: made.product.slug };
}

/**
 * An OAuth client of the product (`POST /v1/products/:p/clients`). The secret is shown this once:
 * the owner copies it into the configuration of whatever holds it.
 * - recommended and two-legged: `type: installed`, no scope (full scope);
 * - simple authentication, mobile app: `type: installed`, `scope: customers:create`;
 * - simple authentication, web app: `type: web`, `redirect_uri`, `scope: customers:create`.
 */
export async function createProductClient(apiUrl: string, token: string, product: Product, body: { name: string; type?: 'installed' | 'web'; scope?: string; redirect_uri?: string }): Promise<OAuthClient> {
  const made = await api<{ client: OAuthClient }>(apiUrl, `/v1/products/${product.id}/clients`, { token, json: { type: 'installed', ...body } });
  return { id: made.client.id, secret: made.client.secret };
}

/**
 * Device identities made in the product in advance (`POST /v1/products/:p/device_identities`):
 * at the factory each device gets its id and secret. Devices made elsewhere are added by id
 * instead: `POST /v1/products/:p/devices` with `{ids: [...]}`.
 */
export async function provisionDevices(apiUrl: string, token: string, product: Product, quantity: number): Promise<DeviceIdentity[]> {
  const made = await api<{ devices: Array<{ id: string; device_secret: string }> }>(apiUrl, `/v1/products/${product.id}/device_identities`, { token, json: { quantity } });
  return made.devices.map((d) => ({ id: d.id, secret: d.device_secret }));
}
