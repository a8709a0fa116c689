/**
 * Two-legged authentication end to end: the owner's one-time setup, the product's server with
 * its own accounts, a lamp and two users of the app. `runTwoLeggedServer` is what `main.ts` runs
 * and what test/guides.test.ts checks.
 */
import { randomBytes } from 'node:crypto';
import { ApiError } from '../shared/api.js';
import type { CommonOptions } from '../shared/cli.js';
import { HOME_NETWORKS, HOME_WIFI, startListeningLamp, type ListeningLamp } from '../shared/lamp.js';
import { createProductClient, ownerProduct, ownerToken, provisionDevices, type OAuthClient, type Product } from '../shared/owner.js';
import { setUpTypingPasswords, type SetupOutcome, type SetupProtocol } from '../shared/setup.js';
import { PhoneApp } from './app.js';
import { ProductServer } from './server.js';

export interface TwoLeggedRun {
  product: Product;
  /** The two-legged client the server holds (no scope: its secret never leaves the server). */
  client: OAuthClient;
  server: ProductServer;
  lamp: ListeningLamp;
  alice: { email: string; password: string; app: PhoneApp };
  bob: { email: string; password: string; app: PhoneApp };
  /** The tokens Alice's app held, in order: from sign-up, from the log-in, after renewal. */
  tokens: { signUp: string; logIn: string; renewed: string };
  outcomes: {
    /** The protocol the app set the lamp up with, and how each try ended (a typo first). */
    setup: { protocol: SetupProtocol; attempts: SetupOutcome[] };
    aliceDevices: string[];
    aliceCall: number;
    aliceTemp: number | string | boolean;
    /** What `led("off")` answered with the renewed token. */
    aliceRenewedCall: number;
    bobRefused: { status: number; error: string | undefined };
  };
  close(): Promise<void>;
}

export interface TwoLeggedOptions extends CommonOptions {
  log?: (line: string) => void;
  customerTokenLifetimeSeconds?: number;
  /** The device-setup protocol the app speaks: TCP (default, as Particle's mobile SDKs) or HTTP. */
  setupProtocol?: SetupProtocol;
}

export async function runTwoLeggedServer(options: TwoLeggedOptions): Promise<TwoLeggedRun> {
  const { apiUrl, mqttUrl } = options;
  const log = options.log ?? (() => undefined);

  // Once, by the owner: a product, a Two-Legged Auth (server) client, a device identity.
  const token = await ownerToken(apiUrl, options.ownerToken);
  const product = await ownerProduct(apiUrl, token, 'Lamps (two-legged)', options.product);
  const client = await createProductClient(apiUrl, token, product, { name: 'lamp server', type: 'installed' });
  const [identity] = await provisionDevices(apiUrl, token, product, 1);
  log(`owner: product ${product.slug} (${product.id}), server client ${client.id} (no scope), device ${identity!.id}`);

  // A new lamp, switched on at the user's home: in listening mode, on no network yet.
  const lamp = await startListeningLamp(mqttUrl, identity!, { networks: HOME_NETWORKS, log });
  const protocol = options.setupProtocol ?? 'tcp';
  try {
    const server = new ProductServer({
      apiUrl, product: product.id, client,
      ...(options.customerTokenLifetimeSeconds !== undefined ? { customerTokenLifetimeSeconds: options.customerTokenLifetimeSeconds } : {}),
    });
    const suffix = randomBytes(4).toString('hex');
    const alice = { email: `alice-${suffix}@example.com`, password: 'alice password', app: new PhoneApp(apiUrl, product.id, server) };
    const bob = { email: `bob-${suffix}@example.com`, password: 'bob password', app: new PhoneApp(apiUrl, product.id, server) };

    // Sign-up: the server's account and the shadow customer; the app sets the lamp up.
    await alice.app.signUp(alice.email, alice.password);
    const signUpToken = alice.app.accessToken;
    log(`alice: signed up with the server; shadow customer ${alice.email} created (no password)`);
    // With the token the server minted, on the lamp's access point: a typo in the password, then right.
    const setup = await setUpTypingPasswords([HOME_WIFI.typo, HOME_WIFI.password], (password) => alice.app.setUpDevice(lamp.address(protocol), { ssid: HOME_WIFI.ssid, password }, log), log);
    log(`alice: the app set the lamp up over ${protocol} with a claim code of her token; the lamp claimed itself`);

    // A later session: log in with the server, which mints a fresh token; the app calls Skyport.
    await alice.app.logIn(alice.email, alice.password);
    const logInToken = alice.app.accessToken;
    const aliceDevices = (await alice.app.listDevices()).map((d) => d.id);
    const aliceCall = await alice.app.callFunction(lamp.id, 'led', 'on');
    const aliceTemp = await alice.app.getVariable(lamp.id, 'temp');
    log(`alice: logged in, fresh token; her devices: ${aliceDevices.join(', ')}; led("on") answered ${aliceCall}; temp is ${String(aliceTemp)}`);

    // The token renewed with the refresh token (the server does it: it needs the client secret).
    await alice.app.renew();
    const renewed = alice.app.accessToken;
    const aliceRenewedCall = await alice.app.callFunction(lamp.id, 'led', 'off');
    log(`alice: token renewed with the refresh token; led("off") answered ${aliceRenewedCall}`);

    await bob.app.signUp(bob.email, bob.password);
    await bob.app.logIn(bob.email, bob.password);
    let bobRefused: { status: number; error: string | undefined } | undefined;
    try {
      await bob.app.callFunction(lamp.id, 'led', 'on');
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      bobRefused = { status: err.status, error: err.error };
    }
    if (!bobRefused) throw new Error("bob's token reached alice's lamp");
    log(`bob: his token gets ${bobRefused.status} ${String(bobRefused.error)} for alice's lamp`);

    return {
      product, client, server, lamp, alice, bob,
      tokens: { signUp: signUpToken, logIn: logInToken, renewed },
      outcomes: { setup: { protocol, attempts: setup.outcomes }, aliceDevices, aliceCall, aliceTemp, aliceRenewedCall, bobRefused },
      close: () => lamp.close(),
    };
  } catch (err) {
    await lamp.close();
    throw err;
  }
}
