import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createSender, MAX_ANSWER_BYTES } from '../../src/services/webhooks/sender.js';
import { destinationCheck } from '../../src/services/webhooks/destinations.js';

/*
 * The sender's deadline covers the whole exchange: a receiver that never answers, and one that
 * sends its answer's head and then its body a byte at a time (never idle long enough for a read
 * time-out), are cut off after the time-out, each a "no answer". An answer is read up to its
 * bound and no further.
 */
const TIMEOUT_MS = 300;
const held: ServerResponse[] = [];
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/never') held.push(res);
    else if (req.url === '/drip') {
      // A byte every 100 ms: never idle long enough for a read time-out, never done.
      res.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => res.write('a'), 100);
      res.on('close', () => clearInterval(drip));
    } else if (req.url === '/endless') {
      // An answer that never ends, as fast as the connection takes it.
      res.writeHead(200, { 'content-type': 'text/plain', 'retry-after': '7' });
      const more = () => { while (res.write('b'.repeat(16 * 1024))); };
      res.on('drain', more);
      more();
    } else res.end('thanks');
  });
});
let base: string;
const sender = createSender({ check: () => null, timeoutMs: TIMEOUT_MS });

before(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
after(async () => {
  receiver.closeAllConnections();
  receiver.close();
  await sender.close();
});

const post = (path: string) => sender.send({ method: 'POST', url: `${base}${path}`, headers: { 'content-type': 'text/plain' }, body: 'x' }, true);

test('an answer is read whole', async () => {
  const r = await post('/ok');
  assert.deepEqual({ status: r.status, body: r.body, error: r.error }, { status: 200, body: 'thanks', error: null });
});

test('an answer is read up to its bound: one that never ends is cut there, with its status and headers', async () => {
  const r = await post('/endless');
  assert.deepEqual({ status: r.status, length: r.body.length, retryAfter: r.retryAfter, error: r.error }, { status: 200, length: MAX_ANSWER_BYTES, retryAfter: '7', error: null });
  assert.equal(r.body, 'b'.repeat(MAX_ANSWER_BYTES));
  assert.equal((await post('/ok')).body, 'thanks', 'the sender goes on');
});

test('a receiver that never answers, and one that sends its answer\'s body a byte at a time, time out', { timeout: 10_000 }, async () => {
  for (const path of ['/never', '/drip']) {
    const started = performance.now();
    const r = await post(path);
    const took = performance.now() - started;
    assert.equal(r.status, null, path);
    assert.equal(r.error, 'no answer within 0.3 s', path);
    assert.equal(r.refused, false);
    assert.ok(took >= TIMEOUT_MS - 20 && took < TIMEOUT_MS + 2000, `${path}: ${took} ms`);
  }
});

test('an address in the URL is checked at every send, before connecting; a name when it is resolved', async () => {
  const guarded = createSender({ check: destinationCheck([]), timeoutMs: TIMEOUT_MS });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await guarded.send({ method: 'POST', url: `${base}/ok`, headers: {}, body: 'x' }, true);
      assert.deepEqual({ status: r.status, refused: r.refused }, { status: null, refused: true }, `send ${i + 1}`);
      assert.match(r.error ?? '', /127\.0\.0\.1 is a loopback/);
    }
    const named = await guarded.send({ method: 'POST', url: base.replace('127.0.0.1', 'localhost') + '/ok', headers: {}, body: 'x' }, true);
    assert.deepEqual({ status: named.status, refused: named.refused }, { status: null, refused: true });
    assert.match(named.error ?? '', /^localhost resolves to /);
  } finally {
    await guarded.close();
  }
  assert.equal((await post('/ok')).status, 200, 'the allowing sender still sends');
});
