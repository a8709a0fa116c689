// The baseline: a bare node:http server answering a small JSON body like a token response.
import { createServer } from 'node:http';

const body = JSON.stringify({ token_type: 'bearer', access_token: 'a'.repeat(40), expires_in: 7776000 });
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
