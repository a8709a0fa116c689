// The README's walkthrough as one script: sign up, log in with particle-api-js, create a
// two-legged client, get a client_credentials token, revoke it, and see 401 after.
//   node examples/quickstart.mjs            (against http://localhost:8080)
//   SKYPORT_URL=http://host:port node examples/quickstart.mjs
import Particle from 'particle-api-js';

const baseUrl = process.env.SKYPORT_URL ?? 'http://localhost:8080';
const username = process.env.SKYPORT_USERNAME ?? `you-${Date.now()}@example.com`;
const password = process.env.SKYPORT_PASSWORD ?? 'a long password';

// 1. Sign up and log in, with Particle's own JavaScript client pointed at Skyport.
const particle = new Particle({ baseUrl });
await particle.createUser({ username, password });
const login = await particle.login({ username, password });
const userToken = login.body.access_token;
console.log(`logged in as ${(await particle.getUserInfo({ auth: userToken })).body.username}`);

// 2. A two-legged (server) client: installed, no scope. Its secret is shown only now.
const { client } = (await particle.createOAuthClient({ name: 'my back-end', type: 'installed', auth: userToken })).body;
console.log(`client ${client.id} created`);

// 3. A token from the client's own credentials (client_credentials grant).
const backend = new Particle({ baseUrl, clientId: client.id, clientSecret: client.secret });
const cc = await backend.loginAsClientOwner();
const clientToken = cc.body.access_token;
console.log(`client_credentials token expires in ${cc.body.expires_in} s`);

// 4. Revoke it; afterwards it answers 401.
await particle.deleteAccessToken({ token: clientToken });
try {
  await particle.getUserInfo({ auth: clientToken });
  console.log('unexpected: the revoked token still works');
  process.exit(1);
} catch (err) {
  console.log(`after revoking: ${err.statusCode} ${err.body.error}`);
}
