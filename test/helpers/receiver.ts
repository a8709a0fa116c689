import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/** A request a webhook receiver got. */
export interface Received { method: string; url: string; headers: IncomingHttpHeaders; body: string; at: number }

/** What the receiver answers one request: a status, headers, a body, after a delay (ms), or `hang` (never answers). */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** How the next requests are answered (the last rule stays until changed); default 200 "ok". */
  answer(rule: Answer | ((r: Received) => Answer)): void;
  close(): Promise<void>;
}

/**
 * A webhook receiver on a free loopback port: it records every request and answers as told.
 * Webhooks may send to it because the test server's WEBHOOK_ALLOW_PRIVATE lists 127.0.0.1.
 */
export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  let rule: Answer | ((r: Received) => Answer) = { status: 200, body: 'ok' };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const a = typeof rule === 'function' ? rule(r) : rule;
      if (a === 'hang') return;
      const reply = () => {
        res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers });
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(reply, a.delayMs);
      else reply();
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    received,
    answer(r) { rule = r; },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
