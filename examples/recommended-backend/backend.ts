/**
 * A product's back-end in the recommended design (docs/guides/recommended.md).
 *
 * - It holds the product's OAuth client (two-legged server type: `installed`, no scope). The
 *   client's token reaches the product's whole fleet, so its secret stays here and nowhere else.
 * - It keeps its own users (here an in-memory table with scrypt password hashes and sessions)
 *   and records which user owns which device in that table. Skyport never hears of the users:
 *   there are no customers, no customer tokens and no claiming; devices stay unclaimed.
 * - It makes every API call itself, on behalf of a user it has authenticated, after checking in
 *   its own table that the user owns the device.
 *
 * The methods are what the back-end's own HTTP routes would call; the app talks only to them.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { api, ApiError, type FunctionResult, type Request, type TokenResponse, type VariableResult } from '../shared/api.js';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export interface BackendConfig {
  apiUrl: string;
  /** The product's id (or slug). */
  product: number | string;
  /** The product's OAuth client: from the back-end's secret configuration, never from an app. */
  client: { id: string; secret: string };
}

/** The user may not use that device (it is not theirs in the back-end's table). */
export class NotYourDevice extends Error {
  constructor(deviceId: string, why = 'it is not yours') {
    super(`device ${deviceId}: ${why}`);
    this.name = 'NotYourDevice';
  }
}

/** Wrong user name or password, or an unknown session. */
export class NotLoggedIn extends Error {
  constructor(message = 'wrong user name or password') {
    super(message);
    this.name = 'NotLoggedIn';
  }
}

interface User { username: string; salt: Buffer; hash: Buffer; devices: Set<string> }

export class ProductBackend {
  private readonly users = new Map<string, User>();
  private readonly sessions = new Map<string, string>();
  private token: { access: string; refresh: string | undefined; expiresAt: number } | undefined;

  constructor(private readonly config: BackendConfig) {}

  // --- the back-end's own accounts ---------------------------------------------------------

  async signUp(username: string, password: string): Promise<void> {
    if (this.users.has(username)) throw new Error(`${username} is taken`);
    const salt = randomBytes(16);
    this.users.set(username, { username, salt, hash: await scryptAsync(password, salt, 32), devices: new Set() });
  }

  /** Checks the password against the back-end's own table; answers a session id for the app. */
  async logIn(username: string, password: string): Promise<string> {
    const user = this.users.get(username);
    // Hash even for an unknown user, so that timing does not tell which users exist.
    const hash = await scryptAsync(password, user?.salt ?? randomBytes(16), 32);
    if (!user || !timingSafeEqual(hash, user.hash)) throw new NotLoggedIn();
    const session = randomBytes(24).toString('base64url');
    this.sessions.set(session, username);
    return session;
  }

  logOut(session: string): void {
    this.sessions.delete(session);
  }

  // --- devices, owned in the back-end's table ----------------------------------------------

  /**
   * The user adds a device (its id, from a label or a QR code on the box). The back-end checks
   * that the device is in the product (`GET /v1/products/:p/devices/:id`) and that no other user
   * has it, and records it. Nothing changes in Skyport: the device is not claimed.
   */
  async addDevice(session: string, deviceId: string): Promise<void> {
    const user = this.userOf(session);
    for (const other of this.users.values()) {
      if (other !== user && other.devices.has(deviceId)) throw new NotYourDevice(deviceId, 'another user has it');
    }
    await this.productApi(`/devices/${encodeURIComponent(deviceId)}`); // 404 when it is not in the product
    user.devices.add(deviceId);
  }

  myDevices(session: string): string[] {
    return [...this.userOf(session).devices];
  }

  /** Calls a device function for the user: `POST /v1/products/:p/devices/:id/:function {arg}`. */
  async callFunction(session: string, deviceId: string, name: string, arg: string): Promise<number> {
    this.mustOwn(session, deviceId);
    const r = await this.productApi<FunctionResult>(`/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`, { json: { arg } });
    return r.return_value;
  }

  /** Reads a device variable for the user: `GET /v1/products/:p/devices/:id/:variable`. */
  async getVariable(session: string, deviceId: string, name: string): Promise<VariableResult['result']> {
    this.mustOwn(session, deviceId);
    const r = await this.productApi<VariableResult>(`/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`);
    return r.result;
  }

  /** Whether the device is connected: `GET /v1/products/:p/devices/:id` (its `online`). */
  async isOnline(session: string, deviceId: string): Promise<boolean> {
    this.mustOwn(session, deviceId);
    return (await this.productApi<{ online: boolean }>(`/devices/${encodeURIComponent(deviceId)}`)).online;
  }

  private userOf(session: string): User {
    const user = this.users.get(this.sessions.get(session) ?? '');
    if (!user) throw new NotLoggedIn('log in first');
    return user;
  }

  /** The ownership check of this design: the back-end's table, before any request to Skyport. */
  private mustOwn(session: string, deviceId: string): void {
    if (!this.userOf(session).devices.has(deviceId)) throw new NotYourDevice(deviceId);
  }

  // --- the product token ---------------------------------------------------------------------

  /** A request under `/v1/products/:p` with the product token; a token refused as expired is renewed once. */
  private async productApi<T>(path: string, req: Omit<Request, 'token' | 'client'> = {}): Promise<T> {
    const url = `/v1/products/${encodeURIComponent(String(this.config.product))}${path}`;
    try {
      return await api<T>(this.config.apiUrl, url, { ...req, token: await this.productToken() });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) throw err;
      this.token = undefined;
      return api<T>(this.config.apiUrl, url, { ...req, token: await this.productToken() });
    }
  }

  /**
   * The product's access token: `client_credentials` with the client's ID and secret (HTTP
   * Basic) gives a token for the product's fleet, with a refresh token (product clients only).
   * It is kept in memory and renewed a minute before it expires with the refresh token
   * (`grant_type=refresh_token`, single use: each renewal gives the next one).
   */
  private async productToken(): Promise<string> {
    if (this.token && Date.now() < this.token.expiresAt - 60_000) return this.token.access;
    const { apiUrl, client } = this.config;
    let answer: TokenResponse | undefined;
    if (this.token?.refresh) {
      answer = await api<TokenResponse>(apiUrl, '/oauth/token', { client, form: { grant_type: 'refresh_token', refresh_token: this.token.refresh } })
        .catch(() => undefined); // spent or expired: start over with the client's credentials
    }
    answer ??= await api<TokenResponse>(apiUrl, '/oauth/token', { client, form: { grant_type: 'client_credentials', expires_in: '3600' } });
    this.token = { access: answer.access_token, refresh: answer.refresh_token, expiresAt: Date.now() + answer.expires_in * 1000 };
    return this.token.access;
  }
}
