import http from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Received {
  /** The path and query the delivery was POSTed to. */
  path: string;
  id: string;
  timestamp: string;
  /** The `webhook-signature` header: one `v1,<sig>`, or several space-separated during a rotation. */
  signature: string;
  body: string;
  valid: boolean;
  answered: number | 'hung';
}

/**
 * A webhook receiver on a loopback port that verifies every request's Standard Webhooks
 * signature (with the `standardwebhooks` package, as a customer would) and answers as told.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  secret?: string;
  /** How to answer the request: a status, or `hang` to never answer. */
  answer: (id: string, nth: number) => number | 'hang' = () => 204;
  private server!: http.Server;
  url!: string;

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    r.server = http.createServer((req, res) => r.handle(req, res));
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    r.url = `http://127.0.0.1:${(r.server.address() as { port: number }).port}/hook`;
    return r;
  }

  /** Requests per webhook-id. */
  countsById(): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of this.received) m.set(r.id, (m.get(r.id) ?? 0) + 1);
    return m;
  }

  accepted(): Received[] {
    return this.received.filter((r) => typeof r.answered === 'number' && r.answered >= 200 && r.answered < 300);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const headers = {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      };
      let valid = false;
      try {
        if (this.secret) {
          new Webhook(this.secret).verify(body, headers);
          valid = true;
        }
      } catch {
        valid = false;
      }
      const nth = this.received.filter((r) => r.id === headers['webhook-id']).length + 1;
      const answer = valid ? this.answer(headers['webhook-id'], nth) : 401;
      this.received.push({
        path: req.url ?? '',
        id: headers['webhook-id'],
        timestamp: headers['webhook-timestamp'],
        signature: headers['webhook-signature'],
        body,
        valid,
        answered: answer === 'hang' ? 'hung' : answer,
      });
      if (answer === 'hang') return;
      res.statusCode = answer;
      res.end();
    });
  }
}
