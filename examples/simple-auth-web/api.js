/**
 * The page's calls to Skyport's REST API (docs/api.md). Skyport answers them from another origin
 * only when it lists the page's origin in CORS_ORIGINS.
 *
 * What the page holds: the ID of the product's Simple Auth (Web App) client (`type: web`,
 * `scope: customers:create`), which is public by design and sent alone, without a secret; and,
 * once the person has an account, that customer's access token, kept in memory only.
 */

/** A refusal of the API, with its status and the JSON body's `error` and `error_description`. */
export class ApiError extends Error {
  constructor(status, body, what) {
    const reason = body.error_description || body.error || `HTTP ${status}`;
    super(`${what}: ${reason}`);
    this.name = 'ApiError';
    this.status = status;
    this.error = typeof body.error === 'string' ? body.error : undefined;
  }
}

/**
 * One request to `settings.api + path`. `form` is sent form-encoded; `token` as a Bearer header.
 * Resolves to the JSON answer; throws ApiError for 4xx and 5xx, and a readable Error when the
 * API cannot be reached (wrong address, or CORS_ORIGINS not listing this page's origin).
 */
async function call(settings, what, path, { method = 'GET', token, form } = {}) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const init = { method, headers };
  if (form) init.body = new URLSearchParams(form);
  let res;
  try {
    res = await fetch(`${settings.api.replace(/\/+$/, '')}${path}`, init);
  } catch {
    throw new Error(`${what}: Skyport at ${settings.api} could not be reached (is it running, and does CORS_ORIGINS list ${location.origin}?)`);
  }
  const text = await res.text();
  let body;
  try {
    body = text === '' ? {} : JSON.parse(text);
  } catch {
    body = { error: text.slice(0, 200) };
  }
  if (!res.ok) throw new ApiError(res.status, body ?? {}, what);
  return body;
}

const productPath = (settings) => `/v1/products/${encodeURIComponent(settings.product)}`;

/**
 * Sign-up: `POST /v1/products/:p/customers` with `client_id`, `email` and `password`, form-encoded.
 * Skyport creates the customer and logs it in; the answer is its token
 * (`{token_type, access_token, expires_in, refresh_token}`).
 */
export function createCustomer(settings, email, password) {
  return call(settings, 'Creating the account', `${productPath(settings)}/customers`, {
    method: 'POST', form: { client_id: settings.client, email, password },
  });
}

/** A claim code for the customer (`POST /v1/products/:p/device_claims`), valid an hour, used once. */
export async function claimCode(settings, token) {
  const answer = await call(settings, 'Getting a claim code', `${productPath(settings)}/device_claims`, { method: 'POST', token });
  return answer.claim_code;
}

/** The customer's devices (`GET /v1/devices`): those it claimed, each with `id` and `online`. */
export function listDevices(settings, token) {
  return call(settings, 'Listing your devices', '/v1/devices', { token });
}

/** Calls the device's function (`POST /v1/devices/:id/:name`, `arg`); answers its return value. */
export async function callFunction(settings, token, deviceId, name, arg) {
  const answer = await call(settings, `Calling ${name}`, `/v1/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`, {
    method: 'POST', token, form: { arg },
  });
  return answer.return_value;
}
