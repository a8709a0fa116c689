/**
 * Simple authentication end to end: the owner's one-time setup, a lamp, and two customers of the
 * mobile app. `runSimpleAuthApp` is what `main.ts` runs and what test/guides.test.ts checks.
 */
import { randomBytes } from 'node:crypto';
import { ApiError } from '../shared/api.js';
import type { CommonOptions } from '../shared/cli.js';
import { HOME_NETWORKS, HOME_WIFI, startListeningLamp, type ListeningLamp } from '../shared/lamp.js';
import { createProductClient, ownerProduct, ownerToken, provisionDevices, type OAuthClient, type Product } from '../shared/owner.js';
import { setUpTypingPasswords, type SetupOutcome, type SetupProtocol } from '../shared/setup.js';
import { MobileApp } from './app.js';

export interface SimpleAuthRun {
  product: Product;
  /** The customers:create client built into the app. */
  client: OAuthClient;
  lamp: ListeningLamp;
  alice: { email: string; password: string; app: MobileApp };
  bob: { email: string; password: string; app: MobileApp };
  outcomes: {
    /** The protocol the app set the lamp up with, and how each try ended (a typo first). */
    setup: { protocol: SetupProtocol; attempts: SetupOutcome[] };
    /** The devices Alice's token lists after the setup. */
    aliceDevices: string[];
    /** What `led("on")` answered Alice. */
    aliceCall: number;
    aliceTemp: number | string | boolean;
    /** Skyport's answer to Bob's call to Alice's lamp (status and error). */
    bobRefused: { status: number; error: string | undefined };
    /** What `led("off")` answered Alice after logging in again on another phone. */
    aliceAgain: number;
  };
  close(): Promise<void>;
}

export interface SimpleAuthOptions extends CommonOptions {
  log?: (line: string) => void;
  /** The device-setup protocol the app speaks: TCP (default, as Particle's mobile SDKs) or HTTP. */
  setupProtocol?: SetupProtocol;
}

export async function runSimpleAuthApp(options: SimpleAuthOptions): Promise<SimpleAuthRun> {
  const { apiUrl, mqttUrl } = options;
  const log = options.log ?? (() => undefined);

  // Once, by the owner: a product, a Simple Auth (mobile app) client, a device identity.
  const token = await ownerToken(apiUrl, options.ownerToken);
  const product = await ownerProduct(apiUrl, token, 'Lamps (simple authentication)', options.product);
  const client = await createProductClient(apiUrl, token, product, { name: 'lamp app', type: 'installed', scope: 'customers:create' });
  const [identity] = await provisionDevices(apiUrl, token, product, 1);
  log(`owner: product ${product.slug} (${product.id}), app client ${client.id} (customers:create), device ${identity!.id}`);

  // A new lamp, switched on at the customer's home: in listening mode, on no network yet.
  const lamp = await startListeningLamp(mqttUrl, identity!, { networks: HOME_NETWORKS, log });
  const protocol = options.setupProtocol ?? 'tcp';
  try {
    const config = { apiUrl, product: product.id, client };
    const suffix = randomBytes(4).toString('hex');
    const alice = { email: `alice-${suffix}@example.com`, password: 'alice password', app: new MobileApp(config) };
    const bob = { email: `bob-${suffix}@example.com`, password: 'bob password', app: new MobileApp(config) };

    await alice.app.signUp(alice.email, alice.password);
    log(`alice: signed up through the app; Skyport made customer ${alice.email} and gave the app its token`);
    // On the lamp's access point, Alice picks her network and types its password: wrong, then right.
    const setup = await setUpTypingPasswords([HOME_WIFI.typo, HOME_WIFI.password], (password) => alice.app.setUpDevice(lamp.address(protocol), { ssid: HOME_WIFI.ssid, password }, log), log);
    const aliceDevices = (await alice.app.listDevices()).map((d) => d.id);
    log(`alice: set the lamp up over ${protocol}, it is hers; her devices: ${aliceDevices.join(', ')}`);
    const aliceCall = await alice.app.callFunction(lamp.id, 'led', 'on');
    const aliceTemp = await alice.app.getVariable(lamp.id, 'temp');
    log(`alice: led("on") answered ${aliceCall}; temp is ${String(aliceTemp)}`);

    await bob.app.signUp(bob.email, bob.password);
    let bobRefused: { status: number; error: string | undefined } | undefined;
    try {
      await bob.app.callFunction(lamp.id, 'led', 'off');
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      bobRefused = { status: err.status, error: err.error };
    }
    if (!bobRefused) throw new Error("bob's token reached alice's lamp");
    log(`bob: his token gets ${bobRefused.status} ${String(bobRefused.error)} for alice's lamp`);

    // Alice on another phone: the password grant with the app's client gives a fresh token.
    const otherPhone = new MobileApp(config);
    await otherPhone.logIn(alice.email, alice.password);
    const aliceAgain = await otherPhone.callFunction(lamp.id, 'led', 'off');
    log(`alice: logged in on another phone; led("off") answered ${aliceAgain}`);

    return {
      product, client, lamp, alice, bob,
      outcomes: { setup: { protocol, attempts: setup.outcomes }, aliceDevices, aliceCall, aliceTemp, bobRefused, aliceAgain },
      close: () => lamp.close(),
    };
  } catch (err) {
    await lamp.close();
    throw err;
  }
}
