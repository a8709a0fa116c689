/**
 * The recommended design end to end: the owner's one-time setup, two lamps, and the back-end
 * acting for its users. `runRecommendedBackend` is what `main.ts` runs and what
 * test/guides.test.ts checks.
 */
import type { CommonOptions } from '../shared/cli.js';
import { startLamp, type Lamp } from '../shared/lamp.js';
import { createProductClient, ownerProduct, ownerToken, provisionDevices, type OAuthClient, type Product } from '../shared/owner.js';
import { NotYourDevice, ProductBackend } from './backend.js';

export interface RecommendedRun {
  product: Product;
  /** The product client the back-end holds (full scope: its secret never leaves the back-end). */
  client: OAuthClient;
  backend: ProductBackend;
  /** Alice's lamp and Bob's lamp, connected. */
  lamps: [Lamp, Lamp];
  sessions: { alice: string; bob: string };
  outcomes: {
    /** What the back-end got calling `led("on")` on Alice's lamp for her. */
    aliceCall: number;
    /** The `temp` variable of Alice's lamp, read for her. */
    aliceTemp: number | string | boolean;
    /** Why the back-end refused Bob's call to Alice's lamp (it never reached Skyport). */
    bobRefused: string;
    /** What Bob got calling `led("on")` on his own lamp. */
    bobCall: number;
  };
  /** Disconnects the lamps. */
  close(): Promise<void>;
}

export async function runRecommendedBackend(options: CommonOptions & { log?: (line: string) => void }): Promise<RecommendedRun> {
  const { apiUrl, mqttUrl } = options;
  const log = options.log ?? (() => undefined);

  // Once, by the product's owner (console or CLI): a product, the back-end's client (type
  // installed, no scope), and the devices added to the product in advance.
  const token = await ownerToken(apiUrl, options.ownerToken);
  const product = await ownerProduct(apiUrl, token, 'Lamps (recommended design)', options.product);
  const client = await createProductClient(apiUrl, token, product, { name: 'lamp back-end' });
  const identities = await provisionDevices(apiUrl, token, product, 2);
  log(`owner: product ${product.slug} (${product.id}), back-end client ${client.id}, devices ${identities.map((d) => d.id).join(', ')} in the product, unclaimed`);

  // The devices come online (in real life: at the customer's home).
  const lamps: Lamp[] = [];
  try {
    for (const identity of identities) lamps.push(await startLamp(mqttUrl, identity));
    const [aliceLamp, bobLamp] = lamps as [Lamp, Lamp];
    log(`devices: ${lamps.map((l) => l.id).join(', ')} online`);

    // The back-end, configured with the client's ID and secret.
    const backend = new ProductBackend({ apiUrl, product: product.id, client });

    // Its users sign up and log in to the back-end, and add their devices; Skyport is not told.
    await backend.signUp('alice', 'alice password');
    await backend.signUp('bob', 'bob password');
    const alice = await backend.logIn('alice', 'alice password');
    const bob = await backend.logIn('bob', 'bob password');
    await backend.addDevice(alice, aliceLamp.id);
    await backend.addDevice(bob, bobLamp.id);
    log(`back-end: alice has ${backend.myDevices(alice).join(', ')}, bob has ${backend.myDevices(bob).join(', ')}`);

    // The back-end calls the devices for them, with its product token.
    const aliceCall = await backend.callFunction(alice, aliceLamp.id, 'led', 'on');
    const aliceTemp = await backend.getVariable(alice, aliceLamp.id, 'temp');
    log(`alice: led("on") answered ${aliceCall}; temp is ${String(aliceTemp)}; the lamp is ${aliceLamp.on ? 'on' : 'off'}`);

    let bobRefused = '';
    try {
      await backend.callFunction(bob, aliceLamp.id, 'led', 'off');
    } catch (err) {
      if (!(err instanceof NotYourDevice)) throw err;
      bobRefused = err.message;
    }
    if (!bobRefused) throw new Error('the back-end let bob call alice\'s lamp');
    log(`bob: refused by the back-end for alice's lamp (${bobRefused}); alice's lamp is still ${aliceLamp.on ? 'on' : 'off'}`);
    const bobCall = await backend.callFunction(bob, bobLamp.id, 'led', 'on');
    log(`bob: led("on") on his own lamp answered ${bobCall}`);

    return {
      product, client, backend, lamps: [aliceLamp, bobLamp], sessions: { alice, bob },
      outcomes: { aliceCall, aliceTemp, bobRefused, bobCall },
      close: async () => { await Promise.all(lamps.map((l) => l.close())); },
    };
  } catch (err) {
    await Promise.all(lamps.map((l) => l.close()));
    throw err;
  }
}
