/**
 * The app of the two-legged design: it logs in with the product's server (never with Skyport),
 * gets a customer token from it, and with that token calls Skyport directly. It embeds no client
 * credentials at all. When Skyport answers 401 (the token expired) it asks the server to renew
 * the token and tries once more.
 */
import { api, ApiError, type FunctionResult, type Request, type VariableResult } from '../shared/api.js';
import { setUpDevice, type SetupAddress, type WifiCredentials } from '../shared/setup.js';
import type { AppSession, ProductServer } from './server.js';

export class PhoneApp {
  private current: AppSession | undefined;
  /** How many times the app had its token renewed. */
  renewals = 0;

  /** `server` stands for the product's server, which a real app reaches over HTTPS. */
  constructor(private readonly apiUrl: string, private readonly product: number | string, private readonly server: ProductServer) {}

  /** The Skyport token the app holds now. */
  get accessToken(): string {
    if (!this.current) throw new Error('sign up or log in first');
    return this.current.accessToken;
  }

  async signUp(email: string, password: string): Promise<void> {
    this.current = await this.server.signUp(email, password);
  }

  async logIn(email: string, password: string): Promise<void> {
    this.current = await this.server.logIn(email, password);
  }

  async logOut(): Promise<void> {
    if (this.current) await this.server.logOut(this.current.session);
  }

  /** Asks the server for a renewed token (the server spends the refresh token). */
  async renew(): Promise<void> {
    if (!this.current) throw new Error('sign up or log in first');
    this.current = await this.server.refresh(this.current.session);
    this.renewals += 1;
  }

  /**
   * Device setup, as in simple authentication and without the server: a claim code with the
   * customer token (`POST /v1/products/:p/device_claims`), sent with the home network's
   * credentials over the device's setup protocol; the device joins, presents the code and becomes
   * the customer's. Resolves to its id once `GET /v1/devices` lists it online; a wrong password
   * rejects with WifiJoinFailed (the device is back in listening mode).
   */
  async setUpDevice(device: SetupAddress, wifi: WifiCredentials, log?: (line: string) => void): Promise<string> {
    const { claim_code } = await this.skyport<{ claim_code: string }>(`/v1/products/${encodeURIComponent(String(this.product))}/device_claims`, { json: {} });
    const { deviceId } = await setUpDevice({ device, claimCode: claim_code, wifi, listDevices: () => this.listDevices(), ...(log ? { log } : {}) });
    return deviceId;
  }

  /** The customer's devices: `GET /v1/devices`. */
  async listDevices(): Promise<Array<{ id: string; online: boolean }>> {
    return this.skyport('/v1/devices');
  }

  /** `POST /v1/devices/:id/:function {arg}` with the customer token. */
  async callFunction(deviceId: string, name: string, arg: string): Promise<number> {
    return (await this.skyport<FunctionResult>(`/v1/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`, { json: { arg } })).return_value;
  }

  /** `GET /v1/devices/:id/:variable` with the customer token. */
  async getVariable(deviceId: string, name: string): Promise<VariableResult['result']> {
    return (await this.skyport<VariableResult>(`/v1/devices/${encodeURIComponent(deviceId)}/${encodeURIComponent(name)}`)).result;
  }

  /** A request to Skyport with the customer token; on 401 the token is renewed once. */
  private async skyport<T>(path: string, req: Omit<Request, 'token' | 'client'> = {}): Promise<T> {
    try {
      return await api<T>(this.apiUrl, path, { ...req, token: this.accessToken });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) throw err;
      await this.renew();
      return api<T>(this.apiUrl, path, { ...req, token: this.accessToken });
    }
  }
}
