import { execFileSync } from 'node:child_process';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
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

  it('reconnects when the server closes a connection, and counts every answer', async () => {
    // Each connection reads into one buffer of its own (bench/lib/load.ts): the reconnect after the
    // server's end of a connection is the load generator's, no longer autocannon's own _connect.
    let opened = 0;
    const closing = createServer((_req, res) => res.writeHead(200, { connection: 'close' }).end(body));
    closing.on('connection', () => opened++);
    await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
    try {
      const seen: string[] = [];
      const m = await runLoad(
        {
          url: `http://127.0.0.1:${(closing.address() as AddressInfo).port}`,
          connections: 2,
          requests: [{ method: 'GET', path: '/', onResponse: (_status, text) => void seen.push(text) }],
        },
        0.5,
      );
      expect(m.errors).toBe(0);
      expect(m.requests).toBeGreaterThan(4);
      expect(opened).toBeGreaterThanOrEqual(m.requests);
      for (const text of seen) expect(text).toBe(body);
    } finally {
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    }
  });
});

describe('bench load generator: its own heap', () => {
  it('does not carry the product into the throughput rounds', () => {
    // Every full collection of the load generator walks its heap, and the catalog's answers make
    // it collect every few hundred milliseconds: the product's modules (60 MB, imported by the
    // publish-validation growth benchmark) are loaded only when that benchmark runs.
    const script = "require('./bench/run.ts'); process.stdout.write(String(Object.keys(require.cache).filter((f) => f.includes('/src/app.factory')).length))";
    const loaded = execFileSync(process.execPath, ['-r', '@swc-node/register', '-e', script], { cwd: join(__dirname, '..'), encoding: 'utf8' });
    expect(loaded).toBe('0');
  });
});
