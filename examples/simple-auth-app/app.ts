/**
 * The mobile app of the simple authentication design (docs/guides/simple-auth.md).
 *
 * The app talks to Skyport directly. It embeds the ID and secret of the product's Simple Auth
 * (mobile app) client: `type: installed`, `scope: customers:create`. Anything shipped in an app
 * can be dug out of it, so that client may do one thing only: create customers. Everything else
 * the app does with the customer's own token, which reaches that customer's devices and nothing
 * else. (A web app embeds only the ID of a `web` client, and sends the ID alone.)
 */
import { api, type FunctionResult, type TokenResponse, type VariableResult } from '../shared/api.js';
import { setUpDevice, type SetupAddress, type WifiCredentials } from '../shared/setup.js';

export interface AppConfig {
  apiUrl: string;
  /** The product's id (or slug). */
  product: number | string;
  /** Built into the app: the customers:create client. */
  client: { id: string; secret: string };
}

export class MobileApp {
  /** The customer's token; a real app keeps it in the platform's keychain. */
  private token: TokenResponse | undefined;

  constructor(private readonly config: AppConfig) {}

  private get productPath(): string {
    return `/v1/products/${encodeURIComponent(String(this.config.product))}`;
  }

  /** The customer's access token (for the test and the curious). */
  get accessToken(): string {
    if (!this.token) throw new Error('sign up or log in first');
    return this.token.access_token;
  }

  /**
   * Sign-up: `POST /v1/products/:p/customers` with the app's client credentials (HTTP Basic),
   * `email` and `password`. Skyport creates the customer and logs it in: the answer is its token.
   */
  async signUp(email: string, password: string): Promise<void> {
    this.token = await api<TokenResponse>(this.config.apiUrl, `${this.productPath}/customers`, {
      client: this.config.client, form: { email, password },
    });
  }

  /**
   * Log-in on a new phone, or when the token expired: the password grant with the app's client,
   * `POST /oauth/token grant_type=password username=<email> password=…`.
   */
  async logIn(email: string, password: string): Promise<void> {
    this.token = await api<TokenResponse>(this.config.apiUrl, '/oauth/token', {
      client: this.config.client, form: { grant_type: 'password', username: email, password },
    });
  }

  /**
   * Device setup: a claim code for this customer (`POST /v1/products/:p/device_claims` with the
   * customer's token), then, on the device's own access point, the code and the home network's
   * credentials over the device's setup protocol (TCP, as Particle's mobile SDKs use; the password
   * encrypted with the device's public key). The device joins the network, connects, presents the
   * code and is the customer's; this resolves to its id once `GET /v1/devices` lists it online.
   * A wrong password rejects with WifiJoinFailed (the device is back in listening mode): ask again.
   */
  async setUpDevice(device: SetupAddress, wifi: WifiCredentials, log?: (line: string) => void): Promise<string> {
    const { claim_code } = await api<{ claim_code: string }>(this.config.apiUrl, `${this.productPath}/device_claims`, { token: this.accessToken, json: {} });
    const { deviceId } = await setUpDevice({ device, claimCode: claim_code, wifi, listDevices: () => this.listDevices(), ...(log ? { log } : {}) });
    return deviceId;
  }

  /** The customer's devices: `GET /v1/devices`. */
  async listDevices(): Promise<Array<{ id: string; online: boolean }>> {
    return api<Array<{ id: string; online: boolean }>>(this.config.apiUrl, '/v1/devices', { token: this.accessToken });
  }

  /** `POST /v1/devices/:id/:function {arg}` with the customer's token. */
  async callFunction(deviceId: string, name: string, arg: string): Promise<number> {
    const r = await api<FunctionResult>(this.config.apiUrl, `/v1/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`, { token: this.accessToken, json: { arg } });
    return r.return_value;
  }

  /** `GET /v1/devices/:id/:variable` with the customer's token. */
  async getVariable(deviceId: string, name: string): Promise<VariableResult['result']> {
    const r = await api<VariableResult>(this.config.apiUrl, `/v1/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`, { token: this.accessToken });
    return r.result;
  }
}
