import type { FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyReply } from 'fastify';

/**
 * What browsers are told to enforce (docs/security.md, "The console in the browser"). Two sets:
 * every answer carries one header, and the console's own answers (its document and its files,
 * src/http/console.ts) carry the console's policy, set by @fastify/helmet.
 */

/**
 * Every answer (JSON, errors, 404s, event streams, /healthz, /metrics, the console's files):
 * `X-Content-Type-Options: nosniff`, so that no browser reads an answer as another type than it
 * says (a JSON body holding a caller's text taken for HTML or script, say). The rest of the
 * browser's protections concern documents, and the API serves none.
 *
 * Set from the synchronous onRequest hook every request already runs (src/http/app.ts), not by
 * @fastify/helmet: the plugin adds two hooks of its own to every request it covers (one of them
 * a promise) and builds its middleware again on each, which cost about 7 µs of CPU per request
 * (a sixth of GET /v1/user) for one constant header. CORS (src/http/cors.ts) is untouched, and
 * none of the Cross-Origin-* headers go on the API: a listed origin's app does not need them and
 * Particle's clients ignore them.
 */
export function noSniff(reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
}

/**
 * The console's document and files, with @fastify/helmet. Every header is named, on or off, so
 * that none comes from the plugin's defaults unseen.
 *
 * The policy allows what the built console uses and nothing else: its own scripts and style sheet
 * (Vite's output: `/assets/*.js` and `*.css`, loaded by `<script type="module" src>`,
 * `<link rel=modulepreload>` and `<link rel=stylesheet>`; no inline script or style element),
 * and calls of its own API with fetch (event streams included). No images, fonts, frames, media,
 * manifests or plug-ins: `default-src 'none'` refuses them; the QR code of two-step
 * verification is SVG drawn by React (`uqr` gives its modules), not an image, and the rollout
 * bars' widths are style properties set by script (the CSSOM), which style-src does not govern.
 * Downloads (the schema, the devices' CSV, the recovery codes) are links to data: and blob:
 * URLs, which no fetch directive governs either.
 */
export const CONSOLE = {
  contentSecurityPolicy: {
    // Not helmet's defaults: they allow images from data:, fonts and styles of any https origin,
    // inline style, and upgrade-insecure-requests, which would send a console opened over plain
    // HTTP (http://192.168.1.20:8080/ on a laptop) looking for its scripts over HTTPS.
    useDefaults: false,
    directives: {
      'default-src': ["'none'"],
      // Neither 'unsafe-inline' nor 'unsafe-eval': no <script> or event handler written into the
      // page runs, nor a script of another origin, nor any string handed to eval or `new Function`.
      // The configuration forms check values with a validator that interprets JSON Schema
      // (console/src/lib/schema-validator.ts) rather than compiling it into code, as Ajv does.
      'script-src': ["'self'"],
      'style-src': ["'self'"],
      'connect-src': ["'self'"],
      'object-src': ["'none'"],
      'base-uri': ["'none'"],
      // Its forms are sent by script; a form that somehow submitted would stay on this origin.
      'form-action': ["'self'"],
      // Nothing may frame the console: it holds a token, and buttons that revoke, delete and roll back.
      'frame-ancestors': ["'none'"],
    },
  },
  // The same for browsers that predate frame-ancestors (RFC 7034).
  xFrameOptions: { action: 'deny' },
  xContentTypeOptions: true,
  // The console's addresses hold product slugs and device IDs: no other site learns them.
  referrerPolicy: { policy: 'no-referrer' },
  // A page of another origin that opens the console gets no handle on its window, nor it on theirs.
  crossOriginOpenerPolicy: { policy: 'same-origin' },
  // The console's files are for the console: no page of another origin loads them.
  crossOriginResourcePolicy: { policy: 'same-origin' },
  // Its own agent cluster, even beside same-site pages (another port of the same host).
  originAgentCluster: true,
  // Off, on purpose: HSTS belongs to whatever terminates TLS (docs/security.md), since Skyport
  // itself serves plain HTTP and is often opened by address on a laptop; COEP would only buy
  // cross-origin isolation, which the console does not use.
  strictTransportSecurity: false,
  crossOriginEmbedderPolicy: false,
  // Off: each concerns something gone or absent here (IE 8's download prompt, Flash's and
  // Acrobat's cross-domain policies, the XSS auditors browsers removed, prefetching DNS of links
  // to other hosts, of which the console has none); Fastify sends no X-Powered-By to remove.
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
  xDnsPrefetchControl: false,
  xPoweredBy: false,
} as const satisfies FastifyHelmetOptions;
