import { useEffect, useRef, useState } from 'react';

/**
 * Event streams (docs/api.md, "Events") read with fetch() and the Authorization header rather
 * than EventSource, which cannot send headers and would put the token in the URL, and so in
 * access logs. The body is parsed as Server-Sent Events (the WHATWG format: `event:` and `data:`
 * lines, a blank line ends an event, `:` lines are comments such as the keep-alive).
 */
export interface StreamEvent {
  name: string;
  data: string | null;
  published_at: string;
  coreid: string;
  ttl?: number;
}

/** connecting: the first request is on its way; live: the stream is open; retrying: it dropped. */
export type StreamState = 'connecting' | 'live' | 'retrying' | 'refused';

export interface StreamHandlers {
  onEvent(e: StreamEvent): void;
  onState?(state: StreamState, why?: string): void;
}

/** Splits a text stream into SSE events; fed chunk by chunk, keeps a partial line for the next. */
export function sseParser(dispatch: (name: string, data: string) => void): (chunk: string) => void {
  let buffer = '';
  let name = '';
  let data: string[] = [];
  return (chunk) => {
    buffer += chunk;
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) dispatch(name || 'message', data.join('\n'));
        name = '';
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
      }
    }
  };
}

const RETRY_MS = [1000, 2000, 5000, 10_000];

/**
 * Opens the stream at `path` and keeps it open: after a drop (the server restarted, the network
 * went away) it reconnects, waiting a little longer each time. A refusal (401, 403, 404) is not
 * retried: it would be refused again. Answers the function that closes it.
 */
export function openEventStream(path: string, token: string, handlers: StreamHandlers): () => void {
  const stop = new AbortController();
  let failures = 0;
  const run = async () => {
    handlers.onState?.('connecting');
    while (!stop.signal.aborted) {
      try {
        const res = await fetch(path, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: stop.signal });
        if (res.status >= 400 && res.status < 500) {
          const body = (await res.json().catch(() => ({}))) as { error_description?: string; error?: string };
          handlers.onState?.('refused', body.error_description ?? body.error ?? `The event stream was refused (${res.status}).`);
          return;
        }
        if (!res.ok || !res.body) throw new Error(`status ${res.status}`);
        handlers.onState?.('live');
        failures = 0;
        const feed = sseParser((name, data) => {
          try {
            const parsed = JSON.parse(data) as Omit<StreamEvent, 'name'>;
            handlers.onEvent({ ...parsed, name });
          } catch {
            // Not one of the cloud's events (nothing else is sent): ignored.
          }
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          feed(value);
        }
      } catch {
        if (stop.signal.aborted) return;
      }
      if (stop.signal.aborted) return;
      const wait = RETRY_MS[Math.min(failures, RETRY_MS.length - 1)] ?? 10_000;
      failures++;
      handlers.onState?.('retrying');
      await new Promise((resolve) => {
        const t = setTimeout(resolve, wait);
        stop.signal.addEventListener('abort', () => { clearTimeout(t); resolve(undefined); }, { once: true });
      });
    }
  };
  void run();
  return () => stop.abort();
}

/**
 * One stream for the component's life: opened when it mounts (or the path changes), closed when
 * the page is left. `onEvent` may change between renders without reopening the stream.
 */
export function useEventStream(path: string, token: string, onEvent: (e: StreamEvent) => void): { state: StreamState; why: string | undefined } {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  const [state, setState] = useState<{ state: StreamState; why: string | undefined }>({ state: 'connecting', why: undefined });
  useEffect(() => openEventStream(path, token, {
    onEvent: (e) => handler.current(e),
    onState: (s, why) => setState({ state: s, why }),
  }), [path, token]);
  return state;
}

/** The stream's state in words, for a status line. */
export function describeStream(state: StreamState, why?: string): string {
  if (state === 'live') return 'Live: changes show as they happen.';
  if (state === 'retrying') return 'The live connection dropped; reconnecting…';
  if (state === 'refused') return `No live updates: ${why ?? 'the stream was refused'}`;
  return 'Connecting for live updates…';
}
