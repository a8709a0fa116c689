import { createServer, type Server, type Socket } from 'node:net';
import { MAX_REQUEST_BYTES, type Answer } from './commands.js';
import type { CommandRunner } from './http-server.js';

/** The two header lines (a command name, a length) fit in this many bytes. */
const MAX_HEADER_BYTES = 128;
const IDLE_MS = 10_000;

/**
 * The setup protocol over TCP, as the firmware serves it on port 5609 (Particle's mobile SDKs use
 * it): a request is `<command>\n<byte length>\n\n<json>` (length 0 and no body for commands
 * without one), the answer `\n\n<json>`, and the device closes the connection after answering:
 * one command per connection.
 */
export function createSetupTcpServer(run: CommandRunner, onError: (err: Error) => void): Server {
  return createServer((socket) => serve(socket, run, onError));
}

type Parsed = { name: string; body: string | undefined } | { error: string } | undefined;

/** The request in `data` once whole; undefined while more is to come. */
function parse(data: Buffer): Parsed {
  const first = data.indexOf(0x0a);
  const second = first < 0 ? -1 : data.indexOf(0x0a, first + 1);
  if (second < 0) return data.length > MAX_HEADER_BYTES ? { error: 'the request must start with "<command>\\n<byte length>\\n\\n"' } : undefined;
  const name = data.subarray(0, first).toString('utf8').trim();
  const lengthText = data.subarray(first + 1, second).toString('utf8').trim();
  if (!/^\d{1,7}$/.test(lengthText)) return { error: 'the second line must be the body\'s length in bytes' };
  const length = Number(lengthText);
  if (length > MAX_REQUEST_BYTES) return { error: `the request is larger than the device takes (${MAX_REQUEST_BYTES} bytes)` };
  if (data.length < second + 2) return undefined;
  if (data[second + 1] !== 0x0a) return { error: 'an empty line must follow the length' };
  const start = second + 2;
  if (data.length < start + length) return undefined;
  return { name, body: length === 0 ? undefined : data.subarray(start, start + length).toString('utf8') };
}

function serve(socket: Socket, run: CommandRunner, onError: (err: Error) => void): void {
  let data = Buffer.alloc(0);
  let done = false;
  socket.setNoDelay(true);
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  socket.on('error', () => undefined);
  const answer = (a: Answer, after?: () => void) => {
    done = true;
    socket.end(`\n\n${JSON.stringify(a)}`, after);
  };
  socket.on('data', (chunk: Buffer) => {
    if (done) return;
    data = Buffer.concat([data, chunk]);
    const request = parse(data);
    if (request === undefined) return;
    if ('error' in request) return answer({ r: -1, error: request.error });
    try {
      const outcome = run(request.name, request.body);
      answer(outcome.answer, outcome.after);
    } catch (err) {
      onError(err as Error);
      answer({ r: -1, error: 'the device could not run the command' });
    }
  });
  // A client that half-closes before its request is whole gets told so.
  socket.on('end', () => {
    if (!done) answer({ r: -1, error: 'the request ended before its body was whole' });
  });
}
