import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MAX_REQUEST_BYTES, type Answer } from './commands.js';

/** Runs one command: its name and body text in, the answer and what to do after it out. */
export type CommandRunner = (name: string, body: string | undefined) => { answer: Answer; after?: () => void };

/** A request this much larger than the device takes is cut off rather than read to its end. */
const DRAIN_LIMIT = 1024 * 1024;

/**
 * The setup protocol over HTTP, as the firmware serves it on port 80: the path names the command,
 * a GET has no body, a POST's body is the raw JSON (browsers send it as
 * application/x-www-form-urlencoded to stay a "simple" cross-origin request without a pre-flight,
 * so the content type is not looked at). Every answer is 200 application/json and allows any
 * origin: a product's web app calls the device straight from the page.
 */
export function createSetupHttpServer(run: CommandRunner, onError: (err: Error) => void): Server {
  const server = createServer((req, res) => handle(req, res, run, onError));
  // A client that opens a connection and sends nothing must not hold the device's server.
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.on('clientError', (_err, socket) => socket.destroy());
  return server;
}

function handle(req: IncomingMessage, res: ServerResponse, run: CommandRunner, onError: (err: Error) => void): void {
  const name = decodeName(req.url ?? '/');
  const chunks: Buffer[] = [];
  let size = 0;
  let answered = false;
  const send = (answer: Answer) => {
    if (answered) return;
    answered = true;
    const body = JSON.stringify(answer);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': 'content-type',
      'cache-control': 'no-store',
      // One command per connection, as the firmware's server: a kept connection would outlive
      // listening mode (the device closes its servers on connect-ap) and fail the app's next call.
      connection: 'close',
    });
    res.end(body);
  };
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    else if (size > DRAIN_LIMIT) {
      send({ r: -1, error: `the request is larger than the device takes (${MAX_REQUEST_BYTES} bytes)` });
      req.destroy();
    }
  });
  req.on('error', () => undefined);
  req.on('end', () => {
    if (answered) return;
    // The pre-flight a browser sends before a call it does not consider simple.
    if (req.method === 'OPTIONS') return send({ r: 0 });
    if (size > MAX_REQUEST_BYTES) return send({ r: -1, error: `the request is larger than the device takes (${MAX_REQUEST_BYTES} bytes)` });
    if (name === undefined) return send({ r: -1, error: 'the path must name a command, e.g. /device-id' });
    const text = size === 0 ? undefined : Buffer.concat(chunks).toString('utf8');
    try {
      const outcome = run(name, text);
      send(outcome.answer);
      if (outcome.after) res.once('finish', outcome.after);
    } catch (err) {
      // Never expected; the device answers and keeps serving all the same.
      onError(err as Error);
      send({ r: -1, error: 'the device could not run the command' });
    }
  });
}

/** `/device-id?x=1` → `device-id`; a path of more than one segment names no command. */
function decodeName(url: string): string | undefined {
  const path = url.split('?')[0] ?? '';
  const name = path.replace(/^\/+/, '');
  if (name === '' || name.includes('/') || name.length > 64) return undefined;
  return name;
}
