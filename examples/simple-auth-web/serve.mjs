#!/usr/bin/env node
/**
 * Serves this folder's page on loopback: `node serve.mjs [--port N]` (0, the default, takes a
 * free port) and prints the URL to open. For trying the page out, not for production: any
 * static file server will do, as long as the page's origin is the one listed in Skyport's
 * CORS_ORIGINS.
 *
 * It serves the page's own files only (HTML, CSS and JavaScript of this folder, no sub-folder),
 * never a path that would leave it, and sends a Content-Security-Policy that refuses inline script
 * and style: the page needs neither.
 */
import { createServer } from 'node:http';
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(fileURLToPath(import.meta.url));
const TYPES = { '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };
const HEADERS = {
  // The page calls Skyport and the device, wherever they are: any http(s) address.
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The file a request path names, or undefined: one plain name of this folder (or / for
 * index.html) with a served extension. Anything with a slash, a backslash or dots in front after
 * decoding (`/../x`, `/%2e%2e%2fx`, `/sub/x`) names nothing.
 */
export function fileFor(urlPath) {
  let name;
  try {
    name = decodeURIComponent(urlPath.split('?')[0]).replace(/^\//, '');
  } catch {
    return undefined;
  }
  if (name === '') name = 'index.html';
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(name) || basename(name) !== name) return undefined;
  if (!(extname(name) in TYPES)) return undefined;
  return join(ROOT, name);
}

/** Starts the server on `host:port`; resolves to its URL and a close function. */
export async function serve({ port = 0, host = '127.0.0.1' } = {}) {
  const server = createServer(async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...HEADERS, allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    const file = fileFor(req.url ?? '/');
    let body;
    try {
      if (file === undefined) throw new Error('not served');
      body = await readFile(file);
    } catch {
      res.writeHead(404, { ...HEADERS, 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    res.writeHead(200, { ...HEADERS, 'content-type': TYPES[extname(file)], 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return {
    url: `http://${host}:${address.port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `--port N` from the command line; 0 when absent. */
function portArgument(argv) {
  const at = argv.indexOf('--port');
  if (at === -1) return 0;
  const port = Number(argv[at + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error('--port takes a port number (0 for any free port)');
    process.exit(2);
  }
  return port;
}

// Run as a program (not imported): the module's path is the one node was started with.
if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const { url } = await serve({ port: portArgument(process.argv.slice(2)) });
  console.log(url);
}
