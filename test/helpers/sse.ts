import { fromAddress } from './http.js';

/** An event as an event stream sends it (docs/particle-compatibility.md#events). */
export interface StreamedEvent { name: string; data: string | null; coreid: string; published_at: string }

export interface EventStream {
  /** Every event received so far, in order. */
  readonly events: StreamedEvent[];
  close(): void;
}

/**
 * Opens an event stream (GET …/events) over the network and records its events; resolves once
 * the server has sent its opening comment, so that what is published afterwards is seen.
 * `from`: the local (loopback) address the connection comes from.
 */
export async function openEventStream(url: string, token: string, options: { from?: string } = {}): Promise<EventStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal, ...(options.from ? { dispatcher: fromAddress(options.from) } : {}) } as RequestInit);
  if (res.status !== 200 || !res.body) throw new Error(`event stream ${url}: ${res.status} ${await res.text()}`);
  const events: StreamedEvent[] = [];
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let opened: () => void = () => undefined;
  const open = new Promise<void>((resolve) => { opened = resolve; });
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.startsWith(':')) opened();
          const name = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (name !== undefined && data !== undefined) events.push({ name, ...(JSON.parse(data) as Omit<StreamedEvent, 'name'>) });
        }
      }
    } catch {
      // Closed by the test.
    }
  })();
  await open;
  return { events, close: () => controller.abort() };
}
