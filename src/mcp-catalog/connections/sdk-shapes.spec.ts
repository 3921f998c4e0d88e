import { Client } from '@modelcontextprotocol/client';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { LoopbackPool } from '../../../test/support/loopback-pool';
import { McpClientPool } from './mcp-client-pool.service';
import { fromServerShape, initializeResultShape } from './sdk-shapes';

// Under MAX_MESSAGE_KEYS distinct names (every map here repeats the same ones): a message past it is refused unread (row 144).
const KEYS = 15_000;
const many = () => Object.fromEntries(Array.from({ length: KEYS }, (_, i) => [`k${i}`, i]));

/**
 * A server whose `initialize` answer carries what the client's schemas copy key by key (an
 * `experimental` capability of KEYS keys, long instructions, a long name), and whose `tools/list`
 * answer comes after a `list_changed` notice whose `_meta` holds KEYS keys.
 */
async function heavyServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const answer = (result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      if (message.method === 'initialize') {
        const result = {
          protocolVersion: message.params!.protocolVersion,
          capabilities: { tools: { listChanged: true, extra: many() }, experimental: { pad: many() } },
          serverInfo: { name: 'n'.repeat(10_000), version: '1', icons: [many()] },
          instructions: 'i'.repeat(1_000_000),
        };
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'heavy' }).end(answer(result));
      }
      const notice = { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: many() } };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'heavy' });
      res.end(`data: ${JSON.stringify(notice)}\n\ndata: ${answer({ tools: [{ name: 'ok', inputSchema: { type: 'object' } }] })}\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
}

/** Attack round 14, O-F4: what the SDK's client checks with its own schemas is handed only the fields it uses. */
describe('what the SDK client is handed of a server', () => {
  it("keeps an initialize answer's version, capability flags, and name and version cut; drops the rest", () => {
    const shaped = initializeResultShape({
      protocolVersion: '2025-11-25',
      capabilities: { tools: { listChanged: true, extra: many() }, logging: {}, experimental: { pad: many() }, resources: 'no' },
      serverInfo: { name: 'x'.repeat(1000), version: '1.2', icons: [] },
      instructions: 'long',
    });
    expect(shaped).toEqual({
      protocolVersion: '2025-11-25',
      capabilities: { tools: { listChanged: true }, logging: {} },
      serverInfo: { name: 'x'.repeat(256), version: '1.2' },
    });
    // Not an object: left for the SDK to refuse.
    expect(initializeResultShape('nope')).toBe('nope');
    // A capability named like Object.prototype's members is data, not an inherited member.
    expect(initializeResultShape({ protocolVersion: 'v', capabilities: JSON.parse('{"__proto__":{"listChanged":true}}'), serverInfo: {} })).toMatchObject({
      capabilities: {},
    });
  });

  it("keeps a notification's or request's fields the client reads, nothing else", () => {
    const meta = { _meta: many() };
    expect(fromServerShape({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: meta })).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
    });
    expect(fromServerShape({ jsonrpc: '2.0', id: 7, method: 'ping', params: meta })).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
    expect(fromServerShape({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3, reason: 'r'.repeat(1000), ...meta } })).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 3, reason: 'r'.repeat(256) },
    });
    expect(
      fromServerShape({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1, total: 2, message: 'm', ...meta } }),
    ).toEqual({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1, total: 2, message: 'm' } });
  });

  describe('through the pool', () => {
    let mcp: Awaited<ReturnType<typeof heavyServer>>;
    let loop: LoopbackPool;
    let pool: McpClientPool;
    beforeAll(async () => {
      mcp = await heavyServer();
      loop = new LoopbackPool(30_000);
      pool = loop.pool;
    });
    afterAll(() => loop.close(mcp.server));

    it('the client keeps none of what it does not use of the server, and still hears list_changed', async () => {
      const changed: string[] = [];
      pool.onToolsChanged((_org, id) => changed.push(id));
      const target = loop.target(mcp.url, 'heavy');
      await expect(pool.listTools(target, { timeoutMs: 20_000 })).resolves.toEqual([expect.objectContaining({ name: 'ok' })]);
      const client = await (pool as unknown as { pool: Map<string, { client: Promise<Client> }> }).pool.get('heavy')!.client;
      // Was the whole answer: 15,000 keys copied twice by the SDK's schemas, and a megabyte of instructions kept.
      expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: true } });
      expect(client.getInstructions()).toBeUndefined();
      expect(client.getServerVersion()).toEqual({ name: 'n'.repeat(256), version: '1' });
      expect(changed).toEqual(['heavy']);
    });
  });
});
