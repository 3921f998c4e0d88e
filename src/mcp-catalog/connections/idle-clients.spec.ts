import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { LoopbackPool } from '../../../test/support/loopback-pool';
import { until } from '../../../test/support/until';
import { McpClientPool } from './mcp-client-pool.service';

/** A Streamable HTTP server that keeps each session's event stream (GET) open, and counts those open. */
async function sessionServer(): Promise<{ server: Server; url: string; state: { streamsOpen: number; deleted: number } }> {
  const state = { streamsOpen: 0, deleted: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      state.streamsOpen++;
      req.socket.once('close', () => state.streamsOpen--);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'idle' });
      return void res.write(': open\n\n');
    }
    if (req.method === 'DELETE') {
      state.deleted++;
      return void res.writeHead(200).end();
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result =
        message.method === 'initialize'
          ? { protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'idle', version: '1' } }
          : { tools: [{ name: 'ok', inputSchema: { type: 'object' } }] };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'idle' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, state };
}

/**
 * Attack round 14, O-F5: only a local server's client was closed when left unused. A remote one
 * stayed in the pool with its session and event stream for the node's life, also once its
 * connection was deleted on another node (nothing else ever closes it there): every connection an
 * organization made and deleted, used on other nodes, held a socket and a client on each of them.
 */
describe('McpClientPool: clients left unused', () => {
  let mcp: Awaited<ReturnType<typeof sessionServer>>;
  let loop: LoopbackPool;
  let pool: McpClientPool;
  beforeAll(async () => {
    mcp = await sessionServer();
    loop = new LoopbackPool(10_000, { mcpIdleProcessMs: 300 });
    pool = loop.pool;
  });
  afterAll(() => loop.close(mcp.server));

  it("closes a remote server's client, its session and event stream, once unused for the idle time; the next use opens a new one", async () => {
    const target = loop.target(mcp.url, 'remote-1');
    await pool.listTools(target, { timeoutMs: 5000 });
    expect(pool.size()).toBe(1);
    await until(
      async () => mcp.state.streamsOpen,
      (n) => n === 1,
    );
    // Was held for good: the pool kept it and the server its stream.
    await until(
      async () => ({ size: pool.size(), open: mcp.state.streamsOpen }),
      (s) => s.size === 0 && s.open === 0,
      5000,
    );
    await expect(pool.listTools(target, { timeoutMs: 5000 })).resolves.toEqual([expect.objectContaining({ name: 'ok' })]);
    expect(pool.size()).toBe(1);
  });

  it("closes a client used since only by listings nobody asked for (a server's list_changed), as one left unused (attack round 21, AD-F3)", async () => {
    const target = loop.target(mcp.url, 'remote-2');
    await pool.listTools(target, { timeoutMs: 5000 });
    // A listing every 50 ms on the server's list_changed, for up to ten times the idle time: each kept the
    // client (and its session, and so the next list_changed) open for good.
    const started = Date.now();
    let closed = false;
    while (Date.now() - started < 3000 && !closed) {
      await pool.listTools(target, { timeoutMs: 5000, unasked: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      closed = pool.size() === 0;
    }
    expect(closed).toBe(true);
    // A use someone asked for keeps it open as before.
    await pool.listTools(target, { timeoutMs: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await pool.listTools(target, { timeoutMs: 5000 });
    expect(pool.size()).toBe(1);
  });
});
