import type { FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';

/**
 * The routes that read a multipart body (a fleet's file of device ids, a firmware upload) are
 * registered through this, in a scope of their own with @fastify/multipart. Registered for the
 * whole app, the plugin ran an async `onResponse` hook on every request (it deletes the files it
 * saved to disk, which Skyport never asks it to): about 2 µs of each request, a read's included
 * (docs/benchmarks.md, "Token issuance and authenticated reads"). Any other route answers a
 * multipart body with 415 unsupported_media_type, as it does any type it does not take.
 */
export function multipartRoutes(app: FastifyInstance, routes: (scope: FastifyInstance) => void): void {
  void app.register(async (scope) => {
    // The fleet import reads its one small file with these; the firmware upload passes limits of
    // its own where it reads the parts (a binary is larger).
    await scope.register(multipart, { limits: { files: 1, fileSize: 1024 * 1024, fields: 10, parts: 12 } });
    routes(scope);
  });
}
