// The comparison of `npm run bench`: oidc-provider (panva) issuing access tokens with the
// client_credentials grant, its in-memory adapter, one client authenticating with
// client_secret_post. Run as a child process (fork); it listens on a free loopback port and
// reports it over IPC. CLIENT_ID and CLIENT_SECRET come from the environment.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const clientId = process.env.CLIENT_ID ?? 'bench';
const clientSecret = process.env.CLIENT_SECRET ?? 'bench-secret';

// A signing key of our own, so that the provider does not fall back to its development keys
// (client_credentials access tokens are opaque and not signed, but the provider wants a key).
const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'ES256',
    }],
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: false },
    },
    jwks: { keys: [{ ...jwk, use: 'sig', alg: 'ES256', kid: 'bench' }] },
    cookies: { keys: ['bench-cookie-key-not-secret'] },
    ttl: { ClientCredentials: 600 },
  });
  server.on('request', provider.callback());
  process.send?.({ port });
});
process.on('disconnect', () => process.exit(0));
