// The baseline of `npm run bench`: a bare node:http server answering a small JSON body shaped
// like a token response. Run as a child process (fork) so that its CPU is its own; it listens on
// a free loopback port and reports it over IPC.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const body = JSON.stringify({ token_type: 'bearer', access_token: randomBytes(20).toString('hex'), expires_in: 7776000 });
const length = Buffer.byteLength(body);

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': length });
    res.end(body);
  });
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('disconnect', () => process.exit(0));
