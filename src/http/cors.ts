import type { FastifyInstance } from 'fastify';
import cors from '@fastify/cors';

/**
 * Cross-origin access for customers' browser apps (the Simple Auth web app design, where
 * particle-api-js runs in a page of the product's own origin). Only the origins listed in
 * CORS_ORIGINS get the Access-Control-Allow-* headers (Fetch standard, "CORS protocol"); any other
 * origin gets none, so the browser keeps the answer from the page, and credentials are never
 * allowed for it. The API's credentials are bearer tokens, not cookies: allowing credentials for a
 * listed origin only lets an app that sends `credentials: 'include'` read the answers.
 */
export async function allowListedOrigins(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  // None listed (the default): no CORS at all, and answers do not vary by Origin.
  if (origins.length === 0) return;
  const listed = new Set(origins);
  await app.register(cors, {
    // The answer depends on the Origin header, listed or not: caches must keep them apart.
    origin: (origin, done) => done(null, origin !== undefined && listed.has(origin)),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Accept', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'WWW-Authenticate', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
    maxAge: 600,
    strictPreflight: true,
  });
}
