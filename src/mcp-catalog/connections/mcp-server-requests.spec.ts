import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { LoopbackPool } from '../../../test/support/loopback-pool';
import { until } from '../../../test/support/until';
import { MAX_REPLIES_IN_FLIGHT, REPLY_BURST } from './answer-watching.transport';
import { McpClientPool } from './mcp-client-pool.service';

const FLOOD = 600;
const METHODS = ['ping', 'sampling/createMessage', 'elicitation/create', 'roots/list'];

/**
 * A Streamable HTTP MCP server that, once a session's event stream (GET) opens, sends `count`
 * requests on it (pings, and the sampling, elicitation and roots requests a client that declares
 * no capability must refuse): all at once, or with `lockstep` the next as soon as the client
 * replies to the last (or 100 ms after it went unanswered). The client's replies (POSTs) are held
 * unanswered while `holdReplies` is set, else accepted (`202`). It counts the sockets open to it.
 */
async function floodingMcpServer() {
  const state = { holdReplies: true, lockstep: false, count: FLOOD, sent: 0, replies: 0, streams: 0, open: 0, mostOpen: 0 };
  let next: (() => void) | undefined;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      state.streams++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = () => {
        const request = { jsonrpc: '2.0', id: `s${state.streams}-${state.sent}`, method: METHODS[state.sent++ % METHODS.length], params: {} };
        return `event: message\ndata: ${JSON.stringify(request)}\n\n`;
      };
      if (!state.lockstep) return void res.write(Array.from({ length: state.count }, event).join(''));
      let unanswered: NodeJS.Timeout | undefined;
      next = () => {
        clearTimeout(unanswered);
        if (state.sent >= state.count || res.destroyed) return;
        res.write(event());
        unanswered = setTimeout(() => next?.(), 100);
      };
      return next();
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: string | number; method?: string; params?: { protocolVersion?: string } };
      if (message.method === undefined) {
        state.replies++;
        if (state.holdReplies) return;
        res.writeHead(202).end();
        return void next?.();
      }
      if (message.id === undefined) return void res.writeHead(202).end();
      const answer = (result: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flooded' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'initialize') {
        return void answer({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } });
      }
      if (message.method === 'tools/list') return void answer({ tools: [{ name: 'ok', inputSchema: { type: 'object' } }] });
      answer({ content: [{ type: 'text', text: 'fine' }] });
    });
  });
  server.on('connection', (socket) => {
    state.mostOpen = Math.max(state.mostOpen, ++state.open);
    socket.once('close', () => state.open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, state };
}

describe('McpClientPool against a server that floods the client with requests of its own', () => {
  let mcp: Awaited<ReturnType<typeof floodingMcpServer>>;
  let loop: LoopbackPool;
  let pool: McpClientPool;
  const target = () => loop.target(mcp.url);

  beforeEach(async () => {
    mcp = await floodingMcpServer();
    // Replies are held for their call's timeout (30 s here), longer than the test takes to look.
    loop = new LoopbackPool(30_000);
    pool = loop.pool;
  });
  afterEach(() => loop.close(mcp.server));

  it('replies it is never answered hold a few sockets, not one per request; calls still work', async () => {
    const t = target();
    await pool.listTools(t, { timeoutMs: 30_000 });
    await until(
      async () => ({ ...mcp.state }),
      (s) => s.streams === 1 && s.replies >= MAX_REPLIES_IN_FLIGHT,
    );
    // Every request has been read by now; a reply per request opened a socket per request before.
    await new Promise((r) => setTimeout(r, 500));
    expect(mcp.state.replies).toBe(MAX_REPLIES_IN_FLIGHT);
    // The event stream, the held replies, and the socket the calls reuse.
    expect(mcp.state.mostOpen).toBeLessThanOrEqual(MAX_REPLIES_IN_FLIGHT + 2);
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 2000 })).resolves.toMatchObject({ content: [{ type: 'text', text: 'fine' }] });
    expect(mcp.state.mostOpen).toBeLessThanOrEqual(MAX_REPLIES_IN_FLIGHT + 3);
  });

  it('replies it answers at once are sent at a bounded rate, not one per request', async () => {
    // Each request comes once the last was replied to: a bound on replies at once never holds one back.
    Object.assign(mcp.state, { holdReplies: false, lockstep: true, count: 60 });
    const t = target();
    const started = Date.now();
    await pool.listTools(t, { timeoutMs: 10_000 });
    await until(
      async () => ({ ...mcp.state }),
      (s) => s.sent === s.count,
      60_000,
    );
    await new Promise((r) => setTimeout(r, 200));
    const seconds = (Date.now() - started) / 1000;
    // A server that pings at a sane pace is answered.
    expect(mcp.state.replies).toBeGreaterThanOrEqual(MAX_REPLIES_IN_FLIGHT);
    expect(mcp.state.replies).toBeLessThanOrEqual(REPLY_BURST + Math.ceil(seconds));
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 2000 })).resolves.toMatchObject({ content: [{ type: 'text', text: 'fine' }] });
  });
});
