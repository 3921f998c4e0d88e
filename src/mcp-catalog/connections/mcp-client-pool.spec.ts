import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { LoopbackPool } from '../../../test/support/loopback-pool';
import { McpClientPool, McpUpstreamError } from './mcp-client-pool.service';
import { MAX_LIST_CHARS } from './mcp-tools';

const MAX_RESPONSE_BYTES = 1024 * 1024;

interface Exchange {
  method: string;
  /** Settles when the server side of the request's socket closes, with the bytes written into it. */
  closed: Promise<{ written: number; ms: number }>;
}

/**
 * A Streamable HTTP MCP server written on the wire, so it can misbehave where the SDK's would not:
 * it answers the handshake and then, by tool name, answers `200 application/json` and writes 64 KB
 * every 50 ms for ever (`trickle`) or as fast as the socket takes (`flood`); `flood_list` makes
 * `tools/list` do the same; `endlessList` makes it list pages of 10 tools with 10,000-character
 * descriptions (as long as one is kept; the pages together are read to 8 MiB), each with a next cursor. Every other request is answered properly.
 */
async function misbehavingMcpServer(): Promise<{ server: Server; url: string; exchanges: Exchange[]; state: { floodList: boolean; endlessList: boolean } }> {
  const exchanges: Exchange[] = [];
  const state = { floodList: false, endlessList: false };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const at = Date.now();
    let written = 0;
    let open = true;
    const closed = new Promise<{ written: number; ms: number }>((resolve) =>
      req.socket.once('close', () => ((open = false), resolve({ written, ms: Date.now() - at }))),
    );
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { name?: string; protocolVersion?: string } };
      exchanges.push({ method: message.params?.name ?? message.method, closed });
      if (message.id === undefined) return void res.writeHead(202).end();
      const answer = (result: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'initialize') {
        return void answer({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'bad', version: '1' } });
      }
      // `slow` answers properly after 400 ms; `broken` with a 500.
      if (message.params?.name === 'slow') return void setTimeout(() => answer({ content: [{ type: 'text', text: 'slow but fine' }] }), 400);
      // `proto` answers a result with a `__proto__` key, written as text (JSON.stringify would not write it).
      if (message.params?.name === 'proto') {
        const body = `{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"p"}],"structuredContent":{"__proto__":{"polluted":1},"a":1}}}`;
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      }
      if (message.params?.name === 'broken') return void res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
      // `wrong_id` answers, as JSON, a request that was never asked.
      if (message.params?.name === 'wrong_id') {
        const body = JSON.stringify({ jsonrpc: '2.0', id: message.id + 1000, result: { content: [] } });
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      }
      // `dropped` opens an event stream, sends a progress notice and ends it unanswered; `dropped_primed`
      // first offers to resume (an event id), which the client then asks for by GET (answered 405).
      if (message.params?.name === 'dropped' || message.params?.name === 'dropped_primed') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (message.params.name === 'dropped_primed') res.write('id: e1\ndata: \n\n');
        const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: message.id, progress: 1 } };
        return void res.end(`event: message\ndata: ${JSON.stringify(progress)}\n\n`);
      }
      const misbehave = message.method === 'tools/list' ? (state.floodList ? 'flood' : undefined) : message.params?.name;
      if (misbehave !== 'trickle' && misbehave !== 'flood') {
        if (message.method === 'tools/list' && state.endlessList) {
          const page = exchanges.filter((e) => e.method === 'tools/list').length;
          const tools = Array.from({ length: 10 }, (_, i) => ({ name: `t${page}_${i}`, description: 'd'.repeat(10_000), inputSchema: { type: 'object' } }));
          return void answer({ tools, nextCursor: `p${page}` });
        }
        if (message.method === 'tools/list') return void answer({ tools: [{ name: 'ok', inputSchema: { type: 'object' } }] });
        return void answer({ content: [{ type: 'text', text: 'fine' }] });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"`);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const send = (): boolean => ((written += chunk.length), res.write(chunk));
      if (misbehave === 'trickle') {
        const tick = setInterval(() => (open ? send() : clearInterval(tick)), 50);
        return;
      }
      const pump = (): void => {
        while (open) if (!send()) return void res.once('drain', pump);
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, exchanges, state };
}

describe('McpClientPool against a server that misbehaves after its headers', () => {
  let mcp: Awaited<ReturnType<typeof misbehavingMcpServer>>;
  let loop: LoopbackPool;
  let pool: McpClientPool;
  const target = () => loop.target(mcp.url);
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err as McpUpstreamError,
    );
  const last = (method: string) => mcp.exchanges.filter((e) => e.method === method).at(-1)!;

  beforeAll(async () => {
    mcp = await misbehavingMcpServer();
    loop = new LoopbackPool(5000, { mcpMaxResponseBytes: MAX_RESPONSE_BYTES });
    pool = loop.pool;
  });
  afterAll(() => loop.close(mcp.server));

  it('a tool call whose answer trickles times out at its timeout, and its socket is closed then, not left reading', async () => {
    const t = target();
    // The session is opened first, so the call's whole timeout is spent waiting on its answer: on a
    // loaded machine a handshake inside 300 ms left the call timed out before the server heard it.
    await pool.callTool(t, 'ok', {}, { timeoutMs: 5000 });
    const started = Date.now();
    const err = await failure(pool.callTool(t, 'trickle', {}, { timeoutMs: 600 }));
    expect(err).toBeInstanceOf(McpUpstreamError);
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
    const socket = await last('trickle').closed;
    expect(socket.ms).toBeLessThan(3000);
    // The session is still good for the next call.
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 2000 })).resolves.toMatchObject({ content: [{ type: 'text', text: 'fine' }] });
  });

  it('a tool call whose answer stream ends unanswered fails upstream_unavailable at once, not timeout; a call beside it is answered', async () => {
    const t = target();
    for (const tool of ['dropped', 'dropped_primed']) {
      const beside = pool.callTool(t, 'slow', {}, { timeoutMs: 20_000 });
      const err = await failure(pool.callTool(t, tool, {}, { timeoutMs: 20_000 }));
      expect([tool, err.code, err.message]).toEqual([tool, 'upstream_unavailable', expect.stringMatching(/closed the connection/)]);
      await expect(beside).resolves.toMatchObject({ content: [{ type: 'text', text: 'slow but fine' }] });
    }
  });

  it('a call answered under another id times out, and its connection keeps nothing of it', async () => {
    const t = target();
    for (let i = 0; i < 5; i++) expect((await failure(pool.callTool(t, 'wrong_id', {}, { timeoutMs: 300 }))).code).toBe('timeout');
    // The connection is kept (a timeout is not the transport's fault), with no call still waited on:
    // each such call left an entry for the connection's life before.
    const pooled = (pool as unknown as { pool: Map<string, { transport: unknown }> }).pool.get(t.connectionId)!;
    expect((pooled.transport as { waiting: Map<unknown, unknown> }).waiting.size).toBe(0);
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 2000 })).resolves.toMatchObject({ content: [{ type: 'text', text: 'fine' }] });
  });

  it('a tool call whose answer floods fails as result_too_large once the cap is read, and its socket is closed', async () => {
    const started = Date.now();
    const err = await failure(pool.callTool(target(), 'flood', {}, { timeoutMs: 5000 }));
    expect(err.code).toBe('result_too_large');
    expect(err.message).toMatch(new RegExp(`more than ${MAX_RESPONSE_BYTES} bytes`));
    expect(Date.now() - started).toBeLessThan(2000);
    const socket = await last('flood').closed;
    expect(socket.written).toBeLessThan(16 * MAX_RESPONSE_BYTES);
  });

  it('a tool list that floods at connect fails as upstream_unavailable, read no further than the cap', async () => {
    mcp.state.floodList = true;
    try {
      const err = await failure(pool.listTools(target(), { timeoutMs: 5000 }));
      expect(err.code).toBe('upstream_unavailable');
      expect(err.message).toMatch(/too large/);
      const socket = await last('tools/list').closed;
      expect(socket.written).toBeLessThan(16 * MAX_RESPONSE_BYTES);
    } finally {
      mcp.state.floodList = false;
    }
  });

  it('a tool list is measured page by page as it arrives, and its reading stops as soon as it passes MAX_LIST_CHARS', async () => {
    mcp.state.endlessList = true;
    const before = mcp.exchanges.filter((e) => e.method === 'tools/list').length;
    try {
      const err = await failure(pool.listTools(target(), { timeoutMs: 5000 }));
      expect(err.code).toBe('upstream_unavailable');
      expect(err.message).toMatch(new RegExp(`more than ${MAX_LIST_CHARS} characters`));
      // Each page keeps 10 × 10,000 characters of descriptions: the 42nd passes 4 MiB; nothing after it is asked for.
      const pages = mcp.exchanges.filter((e) => e.method === 'tools/list').length - before;
      expect(pages).toBe(Math.ceil(MAX_LIST_CHARS / 100_000));
    } finally {
      mcp.state.endlessList = false;
    }
  });

  it("keeps a result's keys as the server sent them, `__proto__` too, as data", async () => {
    const result = await pool.callTool(target(), 'proto', {}, { timeoutMs: 2000 });
    const structured = result.structuredContent as Record<string, unknown>;
    expect(Object.keys(structured)).toEqual(['__proto__', 'a']);
    expect(Object.getOwnPropertyDescriptor(structured, '__proto__')?.value).toEqual({ polluted: 1 });
    // A data property, not a prototype: nothing is inherited from it.
    expect('polluted' in structured).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: 'p' }]);
  });

  it('a call that fails, or a release, leaves the calls already on that client to finish; the next call gets a new client', async () => {
    const t = target();
    await pool.callTool(t, 'ok', {}, { timeoutMs: 2000 });
    const slow = pool.callTool(t, 'slow', {}, { timeoutMs: 3000 });
    await new Promise((r) => setTimeout(r, 100));
    expect((await failure(pool.callTool(t, 'broken', {}, { timeoutMs: 2000 }))).code).toBe('upstream_unavailable');
    // Closing the shared transport here failed this one too, though the server finished it.
    await expect(slow).resolves.toMatchObject({ content: [{ text: 'slow but fine' }] });
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 2000 })).resolves.toMatchObject({ content: [{ text: 'fine' }] });

    // New credentials (or a deletion) on this node: the client leaves the pool at once, and closes once drained.
    const slowAgain = pool.callTool(t, 'slow', {}, { timeoutMs: 3000 });
    await new Promise((r) => setTimeout(r, 100));
    const before = pool.size();
    await pool.release(t.connectionId);
    expect(pool.size()).toBe(before - 1);
    await expect(slowAgain).resolves.toMatchObject({ content: [{ text: 'slow but fine' }] });
  });
});
