/**
 * A Server-Sent Events reader (the WHATWG format the cloud's event streams use, docs/api.md
 * "Events"): text goes in as it arrives, in chunks cut anywhere; whole events come out.
 * Comments (`:ok`, the keepalive `:`) are skipped.
 */
export interface SseEvent { event: string; data: string }

export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  push(text: string): SseEvent[] {
    this.buffer += text;
    const out: SseEvent[] = [];
    for (;;) {
      const nl = this.buffer.search(/\r\n|\r|\n/);
      if (nl < 0) break;
      // A lone \r at the very end may be the first half of \r\n: wait for more.
      if (this.buffer[nl] === '\r' && nl === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + (this.buffer.startsWith('\r\n', nl) ? 2 : 1));
      const done = this.line(line);
      if (done) out.push(done);
    }
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') {
      if (this.data.length === 0) { this.event = ''; return undefined; }
      const e = { event: this.event || 'message', data: this.data.join('\n') };
      this.event = '';
      this.data = [];
      return e;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    return undefined;
  }
}
