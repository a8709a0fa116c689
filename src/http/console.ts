import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

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

export async function consolePages(app: FastifyInstance): Promise<void> {
  // Hashed asset names never change content: cached for a year; the HTML never.
  await app.register(fastifyStatic, {
    root: BUILT,
    // A route per built file (they do not change while it runs); other paths fall to the not-found handler.
    wildcard: false,
    index: 'index.html',
    setHeaders(res, path) {
      res.setHeader('cache-control', path.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable');
    },
  });
}

/** A page of the console asked for by a browser: answers its document; null for anything else. */
export function consolePage(req: FastifyRequest, reply: FastifyReply): FastifyReply | null {
  if (req.method !== 'GET' || API_PATHS.test(req.url) || !(req.headers.accept ?? '').includes('text/html')) return null;
  return reply.header('cache-control', 'no-cache').sendFile('index.html');
}
