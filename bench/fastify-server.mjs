// A minimal Fastify server for bench/multipart-scope.ts: one route answering a GET /v1/user-sized
// JSON body through a response schema, with @fastify/multipart registered for the whole app when
// the first argument is `multipart`. Run as a child process (fork); it listens on a free loopback
// port and reports it over IPC.
import Fastify from 'fastify';
import multipart from '@fastify/multipart';

const app = Fastify({ logger: false });
if (process.argv[2] === 'multipart') await app.register(multipart);
const body = { username: 'bench@example.com', subscription_ids: [], account_info: {}, scim_provisioned: false, no_password: false, mfa: { enabled: false }, tos: null, memberships: [], wifi_device_count: 0, cellular_device_count: 0, created_at: '2026-11-28T04:04:46.333Z' };
app.get('/v1/user', { schema: { response: { 200: { type: 'object', additionalProperties: true } } } }, async () => body);
await app.listen({ port: 0, host: '127.0.0.1' });
process.send?.({ port: app.server.address().port });
process.on('disconnect', () => process.exit(0));
