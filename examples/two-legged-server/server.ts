/**
 * The product's server in the two-legged design (docs/guides/two-legged.md).
 *
 * - It keeps the product's accounts (here an in-memory table with scrypt password hashes).
 * - It holds the product's Two-Legged Auth (server) client: `type: installed`, no scope. With it
 *   the server creates a shadow customer for each of its users and mints tokens for them. That
 *   client can act for every customer of the product, so its secret stays on the server.
 * - At each log-in it mints a fresh customer token (`client_credentials` with
 *   `scope=customer=<email>`) and hands the access token to the app, which then calls Skyport
 *   directly. The refresh token stays here: renewing needs the client's secret anyway.
 *
 * The methods are what the server's own HTTP routes would call.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { api, type TokenResponse } from '../shared/api.js';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export interface ServerConfig {
  apiUrl: string;
  /** The product's id (or slug). */
  product: number | string;
  /** The two-legged client: from the server's secret configuration. */
  client: { id: string; secret: string };
  /** Lifetime asked for each customer token, in seconds (default one hour). */
  customerTokenLifetimeSeconds?: number;
}

/** What the app gets from the server: its session, and a Skyport token to call devices with. */
export interface AppSession {
  session: string;
  accessToken: string;
  /** Seconds the access token lives. */
  expiresIn: number;
}

export class NotLoggedIn extends Error {
  constructor(message = 'wrong e-mail or password') {
    super(message);
    this.name = 'NotLoggedIn';
  }
}

interface Account { email: string; salt: Buffer; hash: Buffer }

export class ProductServer {
  private readonly accounts = new Map<string, Account>();
  /** Session id → the account and the refresh token of its current customer token. */
  private readonly sessions = new Map<string, { email: string; refreshToken: string | undefined }>();

  constructor(private readonly config: ServerConfig) {}

  /**
   * Sign-up: the account in the server's own table, and at the same time its shadow customer in
   * Skyport: `POST /v1/products/:p/customers` with the client's credentials (HTTP Basic),
   * `email` and `no_password=true`. The answer is a token for the new customer, which the app
   * uses to set up the first device.
   */
  async signUp(email: string, password: string): Promise<AppSession> {
    const key = normalize(email);
    if (this.accounts.has(key)) throw new Error(`${key} is taken`);
    const salt = randomBytes(16);
    const hash = await scryptAsync(password, salt, 32);
    const token = await api<TokenResponse>(this.config.apiUrl, `/v1/products/${encodeURIComponent(String(this.config.product))}/customers`, {
      client: this.config.client, form: { email: key, no_password: 'true' },
    });
    this.accounts.set(key, { email: key, salt, hash });
    return this.openSession(key, token);
  }

  /**
   * Log-in: the password is checked against the server's table, then a fresh customer token is
   * minted: `POST /oauth/token` with HTTP Basic, `grant_type=client_credentials`,
   * `scope=customer=<email>` and `expires_in`.
   */
  async logIn(email: string, password: string): Promise<AppSession> {
    const account = this.accounts.get(normalize(email));
    const hash = await scryptAsync(password, account?.salt ?? randomBytes(16), 32);
    if (!account || !timingSafeEqual(hash, account.hash)) throw new NotLoggedIn();
    const token = await api<TokenResponse>(this.config.apiUrl, '/oauth/token', {
      client: this.config.client,
      form: { grant_type: 'client_credentials', scope: `customer=${account.email}`, expires_in: String(this.config.customerTokenLifetimeSeconds ?? 3600) },
    });
    return this.openSession(account.email, token);
  }

  /**
   * Renewal, when the app's token expired: `POST /oauth/token` with HTTP Basic,
   * `grant_type=refresh_token` and the session's refresh token. Refresh tokens are single use;
   * the answer carries the next one.
   */
  async refresh(session: string): Promise<AppSession> {
    const s = this.sessions.get(session);
    if (!s?.refreshToken) throw new NotLoggedIn('log in again');
    const token = await api<TokenResponse>(this.config.apiUrl, '/oauth/token', {
      client: this.config.client, form: { grant_type: 'refresh_token', refresh_token: s.refreshToken },
    }).catch((err: unknown) => {
      this.sessions.delete(session); // spent or expired: the user logs in again
      throw err;
    });
    s.refreshToken = token.refresh_token;
    return { session, accessToken: token.access_token, expiresIn: token.expires_in };
  }

  /** Log-out: `POST /oauth/revoke` of the refresh token also revokes the app's access token. */
  async logOut(session: string): Promise<void> {
    const s = this.sessions.get(session);
    this.sessions.delete(session);
    if (s?.refreshToken) await api(this.config.apiUrl, '/oauth/revoke', { client: this.config.client, form: { token: s.refreshToken } });
  }

  private openSession(email: string, token: TokenResponse): AppSession {
    const session = randomBytes(24).toString('base64url');
    this.sessions.set(session, { email, refreshToken: token.refresh_token });
    return { session, accessToken: token.access_token, expiresIn: token.expires_in };
  }
}

/** Skyport's customer e-mails are unique in any letter case; the server keys its table the same way. */
function normalize(email: string): string {
  return email.trim().toLowerCase();
}
