import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CONSOLE } from './security-headers.js';
import { routeNotFound } from './error-handler.js';

/**
 * The web console (console/, built by `npm run build` into dist/console): served at `/` from
 * the API's own process and origin, so that it needs nothing but the public REST API. Its pages
 * are one HTML document; a browser asking for any page path gets it, and the console's router
 * draws the page. Paths of the API keep their JSON answers, a 404 included.
 */
const BUILT = fileURLToPath(new URL('../../dist/console/', import.meta.url));
const API_PATHS = /^\/(v1|oauth|\.well-known|healthz)(\/|$|\?)/;

/** Whether the console was built (a server run from source before any build has none). */
export function consoleBuilt(): boolean {
  return existsSync(`${BUILT}index.html`);
}

/**
 * The console's files and pages, in a scope of their own: @fastify/helmet gives them the
 * console's browser protections (src/http/security-headers.ts), and its hooks run for them and
 * for requests no route takes, never for the API's routes.
 */
export async function consolePages(app: FastifyInstance): Promise<void> {
  await app.register(async (scope) => {
    // Each route of the scope is one of the console's files, and gets the console's headers: the
    // route option @fastify/helmet reads (@fastify/static takes no route options of its own).
    // Added before the plugin's own onRoute hook, which reads it.
    scope.addHook('onRoute', (route) => {
      route.helmet = CONSOLE;
    });
    // Not global: of the requests no route takes, only the pages get the console's headers (below).
    await scope.register(helmet, { ...CONSOLE, global: false });
    await scope.register(fastifyStatic, {
      root: BUILT,
      // A route per built file (they do not change while it runs); other paths fall to the not-found handler.
      wildcard: false,
      index: 'index.html',
      // Hashed asset names never change content: cached for a year, never asked again; the HTML
      // is asked again each time (it names the assets of the build in place). The plugin's own
      // Cache-Control (`public, max-age=0` by default) is off: it is written after setHeaders and
      // over the not-found handler's header, and would replace both.
      cacheControl: false,
      setHeaders(res, path) {
        res.setHeader('cache-control', path.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable');
      },
    });
    // The app's not-found handler, set here so that it has reply.helmet and reply.sendFile: a
    // page of the console asked for by a browser gets its document; anything else the 404 it always was.
    scope.setNotFoundHandler((req, reply) => {
      if (!consolePage(req)) return routeNotFound(req, reply);
      reply.helmet();
      return reply.header('cache-control', 'no-cache').sendFile('index.html');
    });
  });
}

/** Whether a request is a browser's for a page of the console. */
function consolePage(req: FastifyRequest): boolean {
  return req.method === 'GET' && !API_PATHS.test(req.url) && (req.headers.accept ?? '').includes('text/html');
}
