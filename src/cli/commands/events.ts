import type { Command } from 'commander';
import { contextOf } from '../lib/context.js';
import { bodyOf, refusal, seg, wholeNumberOf } from '../lib/json-input.js';
import { SseParser } from '../lib/sse.js';

/**
 * Events (docs/api.md, "Events"): `subscribe` follows an event stream (Server-Sent Events) and
 * prints each event as it comes, until Ctrl-C or `--count`; `publish` sends one.
 */
interface SubscribeOptions { device?: string; product?: string; count?: string }

/** A stream that says nothing (not even the cloud's keepalive comment) this long is dead. */
const SILENCE_MS = 60_000;

function streamPath(prefix: string | undefined, opts: SubscribeOptions): { path: string; what: string } {
  const { device, product } = opts;
  const base = product !== undefined
    ? device !== undefined ? `/v1/products/${seg(product)}/devices/${seg(device)}/events` : `/v1/products/${seg(product)}/events`
    : device !== undefined ? `/v1/devices/${seg(device)}/events` : '/v1/devices/events';
  const what = device !== undefined ? `device ${device}` : product !== undefined ? `product ${product}` : 'your devices';
  return { path: prefix ? `${base}/${seg(prefix)}` : base, what: `${what}${prefix ? `, events starting with ${prefix}` : ''}` };
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

export function registerEventCommands(program: Command): void {
  program.command('subscribe')
    .description('print events as they happen, one line each (`name data`; --json: a JSON object a line) until Ctrl-C')
    .argument('[prefix]', 'only events whose name starts with this')
    .option('--device <idOrName>', "one device's events")
    .option('--product <idOrSlug>', "a product's fleet events (with --device: that fleet device's)")
    .option('--count <n>', 'exit after this many events')
    .action(async (prefix: string | undefined, opts: SubscribeOptions, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = ctx.authed();
      const limit = opts.count === undefined ? undefined : wholeNumberOf('--count', opts.count, 1, Number.MAX_SAFE_INTEGER);
      const { path, what } = streamPath(prefix, opts);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      // `skyport subscribe | head -1`: the reader went away; so do we.
      const onPipe = (err: NodeJS.ErrnoException) => { if (err.code === 'EPIPE') stop.abort(); };
      process.stdout.on('error', onPipe);
      let seen = 0;
      let connected = false;
      let retry = 0;
      const print = (name: string, payload: Record<string, unknown>) => {
        if (stop.signal.aborted) return;
        const data = payload.data === null || payload.data === undefined ? '' : String(payload.data);
        process.stdout.write(ctx.out.json ? `${JSON.stringify({ name, ...payload })}\n` : `${name}${data === '' ? '' : ` ${data}`}\n`);
        seen += 1;
        if (limit !== undefined && seen >= limit) stop.abort();
      };
      try {
        while (!stop.signal.aborted) {
          // One connection; a silent one is given up, and a lost one reopened (events are not
          // stored, so what happened in between is missed, and said so).
          const conn = new AbortController();
          const onStop = () => conn.abort();
          stop.signal.addEventListener('abort', onStop, { once: true });
          let watchdog: NodeJS.Timeout | undefined;
          const awake = () => { clearTimeout(watchdog); watchdog = setTimeout(() => conn.abort(), SILENCE_MS); };
          try {
            let res: Response;
            try {
              res = await api.fetch('GET', path, { headers: { accept: 'text/event-stream' }, signal: conn.signal });
            } catch (err) {
              if (stop.signal.aborted) break;
              if (!connected) throw err;
              ctx.out.note(`${(err as Error).message}; retrying`);
              await sleep(Math.min(30_000, 1000 * 2 ** retry++), stop.signal);
              continue;
            }
            if (!res.ok) {
              const refused = refusal(res.status, await bodyOf(res));
              // A cloud that is restarting answers 5xx for a moment; a refusal is final.
              if (!connected || res.status < 500) throw refused;
              ctx.out.note(`${refused.message}; retrying`);
              await sleep(Math.min(30_000, 1000 * 2 ** retry++), stop.signal);
              continue;
            }
            if (!res.body) throw new Error('the cloud answered no event stream');
            if (!connected && process.stderr.isTTY) ctx.out.note(`listening to ${what}; Ctrl-C to stop`);
            else if (connected) ctx.out.note('reconnected (events in between are missed)');
            connected = true;
            retry = 0;
            const parser = new SseParser();
            const decoder = new TextDecoder();
            const reader = res.body.getReader();
            awake();
            try {
              for (;;) {
                const { value, done } = await reader.read();
                if (done) break;
                awake();
                for (const e of parser.push(decoder.decode(value, { stream: true }))) {
                  let payload: Record<string, unknown>;
                  try {
                    payload = JSON.parse(e.data) as Record<string, unknown>;
                  } catch {
                    payload = { data: e.data };
                  }
                  print(e.event, payload);
                }
                if (stop.signal.aborted) break;
              }
            } catch (err) {
              if (!conn.signal.aborted) ctx.out.note(`the event stream failed: ${(err as Error).message}`);
            } finally {
              await reader.cancel().catch(() => undefined);
            }
          } finally {
            clearTimeout(watchdog);
            stop.signal.removeEventListener('abort', onStop);
          }
          if (stop.signal.aborted) break;
          ctx.out.note('the event stream ended; reconnecting');
          await sleep(Math.min(30_000, 1000 * 2 ** retry++), stop.signal);
        }
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        process.stdout.off('error', onPipe);
      }
    });

  program.command('publish')
    .description('publish an event to your stream and devices, or with --product to the product\'s')
    .argument('<name>', 'the event name')
    .argument('[data]', 'its data (up to 1024 bytes)')
    .option('--product <idOrSlug>', "publish to this product's stream and fleet")
    .option('--private', 'a private event (the default)')
    .option('--public', 'a public event')
    .option('--ttl <seconds>', 'time to live (default 60)')
    .action(async (name: string, data: string | undefined, opts: { product?: string; private?: boolean; public?: boolean; ttl?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (opts.private && opts.public) throw new Error('give --private or --public, not both');
      const ttl = opts.ttl === undefined ? undefined : wholeNumberOf('--ttl', opts.ttl, 0, 16_777_215);
      const isPrivate = !opts.public;
      const path = opts.product !== undefined ? `/v1/products/${seg(opts.product)}/events` : '/v1/devices/events';
      const answer = await ctx.authed().request('POST', path, { json: { name, ...(data === undefined ? {} : { data }), ...(ttl === undefined ? {} : { ttl }), private: isPrivate } });
      ctx.out.result(answer, () => `published ${name} (${isPrivate ? 'private' : 'public'}${ttl === undefined ? '' : `, ttl ${ttl} s`})${opts.product !== undefined ? ` to product ${opts.product}` : ''}`);
    });
}
