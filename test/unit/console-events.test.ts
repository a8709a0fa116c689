import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openEventStream, sseParser, type StreamEvent, type StreamState } from '../../console/src/lib/events.js';
import { eventually } from '../helpers/eventually.js';

/** The console's event-stream reader (console/src/lib/events.ts), against a plain HTTP server. */

test('the SSE parser: events split anywhere across chunks, comments skipped, multi-line data joined', () => {
  const got: Array<[string, string]> = [];
  const feed = sseParser((name, data) => got.push([name, data]));
  const text = ':ok\n\nevent: spark/status\ndata: {"data":"online"}\n\n: keep-alive\n\nevent: temp\r\ndata: a\r\ndata: b\r\n\r\ndata: unnamed\n\n';
  for (let i = 0; i < text.length; i += 3) feed(text.slice(i, i + 3));
  assert.deepEqual(got, [['spark/status', '{"data":"online"}'], ['temp', 'a\nb'], ['message', 'unnamed']]);
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  let n = 0;
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => { seen.push(req); handler(req, res, n++); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/products/p/events/spark%2Fstatus`;
  return { url, seen, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

const event = (data: string) => `event: spark/status\ndata: ${JSON.stringify({ data, ttl: 60, published_at: '2026-11-23T05:00:00.000Z', coreid: 'abc' })}\n\n`;

test('the reader sends the token in the Authorization header, and reconnects after the stream drops', async () => {
  const server = await serve((_req, res, n) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(':ok\n\n');
    // The first stream gives one event and drops; the second stays open.
    if (n === 0) res.end(event('online'));
    else res.write(event('offline'));
  });
  const events: StreamEvent[] = [];
  const states: StreamState[] = [];
  const close = openEventStream(server.url, 'the-token', { onEvent: (e) => events.push(e), onState: (s) => states.push(s) });
  try {
    await eventually(() => (events.length === 2 ? true : undefined), 5000, 'two events over two connections');
    assert.deepEqual(events.map((e) => [e.name, e.data, e.coreid]), [['spark/status', 'online', 'abc'], ['spark/status', 'offline', 'abc']]);
    await eventually(() => (states.length === 4 ? true : undefined));
    assert.deepEqual(states, ['connecting', 'live', 'retrying', 'live']);
    assert.equal(server.seen.length, 2);
    for (const req of server.seen) {
      assert.equal(req.headers.authorization, 'Bearer the-token');
      assert.ok(!req.url?.includes('the-token'), 'the token stays out of the URL');
    }
  } finally {
    close();
    await server.close();
  }
});

test('a refused stream is said in words and not asked again', async () => {
  const server = await serve((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'invalid_token', error_description: 'The access token is not valid' }));
  });
  const states: Array<[StreamState, string | undefined]> = [];
  const close = openEventStream(server.url, 'old', { onEvent: () => undefined, onState: (s, why) => states.push([s, why]) });
  try {
    const last = await eventually(() => (states.at(-1)?.[0] === 'refused' ? states.at(-1) : undefined));
    assert.equal(last?.[1], 'The access token is not valid');
    assert.equal(server.seen.length, 1);
  } finally {
    close();
    await server.close();
  }
});
