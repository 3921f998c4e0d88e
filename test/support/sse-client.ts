import http from 'node:http';

export interface SseMessage {
  id?: string;
  data?: string;
}

/** A minimal Server-Sent Events reader over node:http, that keeps what it received for assertions. */
export class SseClient {
  readonly messages: SseMessage[] = [];
  comments = 0;
  /** The last `id:` seen, with or without data (what EventSource would send as Last-Event-ID). */
  lastId?: string;
  private buffer = '';
  private waiters: (() => void)[] = [];

  private constructor(
    readonly response: http.IncomingMessage,
    private readonly request: http.ClientRequest,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.feed(chunk));
  }

  static open(url: string, headers: Record<string, string>): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => reject(Object.assign(new Error(`status ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
          return;
        }
        resolve(new SseClient(res, req));
      });
      req.on('error', reject);
    });
  }

  /** Events with data, parsed. */
  get events(): { id: string; event: { id: string; type: string; orgId: string; [k: string]: unknown } }[] {
    return this.messages.filter((m) => m.data !== undefined).map((m) => ({ id: m.id ?? '', event: JSON.parse(m.data!) }));
  }

  async waitFor(predicate: (c: SseClient) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; received ${JSON.stringify(this.messages.map((m) => (m.data ? JSON.parse(m.data).type : `id:${m.id}`)))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.request.destroy();
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const message: SseMessage = {};
      let any = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments++;
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') {
          message.id = value;
          this.lastId = value;
          any = true;
        } else if (field === 'data') {
          message.data = message.data === undefined ? value : `${message.data}\n${value}`;
          any = true;
        }
      }
      if (any) this.messages.push(message);
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
