import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { runLoad } from '../bench/lib/load';

/**
 * The load generator leaves undecoded the answers nothing reads (bench/lib/load.ts), and only
 * those: a row that reads its answers (the approval cycle takes the approval's id from one) gets
 * each of them whole, and every answer is still counted.
 */
describe('bench load generator: answer bodies', () => {
  let server: Server;
  let url: string;
  // Large enough (about 240 KB) to arrive in several chunks. ASCII only: autocannon decodes each
  // chunk on its own, so a character split across two would not survive, with or without the change.
  const body = JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ id: i, text: 'x'.repeat(100) })) });

  beforeAll(async () => {
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('hands a row that reads its answers each body whole, and counts the rows that do not', async () => {
    const seen: string[] = [];
    const read = await runLoad(
      {
        url,
        connections: 2,
        requests: [{ method: 'GET', path: '/read', onResponse: (_status, text) => void seen.push(text) }],
      },
      0.5,
    );
    expect(read.errors).toBe(0);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThanOrEqual(read.requests);
    for (const text of seen) expect(text).toBe(body);

    const unread = await runLoad({ url, connections: 2, requests: [{ method: 'GET', path: '/unread' }] }, 0.5);
    expect(unread.errors).toBe(0);
    expect(unread.requests).toBeGreaterThan(0);
    expect(unread.statusCodes).toEqual({ '200': unread.requests });
  });

  it('leaves the body of a request without onResponse undecoded, once runLoad has run', async () => {
    await runLoad({ url, connections: 1, requests: [{ method: 'GET', path: '/' }] }, 0.2);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Queue = require('autocannon/lib/pipelinedRequestsQueue.js') as new () => {
      insertRequest(req: object): void;
      addBody(data: Buffer): void;
      terminateRequest(): { body: string };
    };
    const queue = new Queue();
    queue.insertRequest({ method: 'GET' });
    queue.addBody(Buffer.from('not read'));
    expect(queue.terminateRequest().body).toBe('');
    queue.insertRequest({ method: 'GET', onResponse: () => undefined });
    queue.addBody(Buffer.from('read, '));
    queue.addBody(Buffer.from('whole'));
    expect(queue.terminateRequest().body).toBe('read, whole');
  });
});
