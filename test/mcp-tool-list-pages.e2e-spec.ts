import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** A server listing one tool a page for `pages` pages, each page padded with `padBytes` of `_meta` the client reads and drops. */
async function paddedListServer(pages: number, padBytes: number) {
  const state = { listed: 0 };
  const pad = 'x'.repeat(padBytes);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') return void res.writeHead(405).end();
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { protocolVersion?: string; cursor?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const json = (value: unknown) =>
        res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value }));
      if (message.method === 'initialize') {
        return void json({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'padded', version: '1' } });
      }
      if (message.method !== 'tools/list') return void json({});
      state.listed++;
      const page = Number(message.params?.cursor ?? 0);
      const tool = { name: `t${page}`, inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } };
      json({ tools: [tool], ...(page + 1 < pages && { nextCursor: String(page + 1) }), ...(padBytes > 0 && { _meta: { pad } }) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, state, close };
}

/**
 * Attack round 14, O-F3: one page of a tool list is read to 8 MiB (row 55), and a list may have 50
 * pages, so a listing read 400 MiB of pages padded with what the client drops (9 s of CPU), at each
 * sync, refresh and list_changed of the connection. The pages together are now read to 8 MiB.
 */
describe('MCP catalog: a tool list padded over many pages (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['mcp:remote']);
  }, 180_000);
  afterAll(async () => {
    await t.close();
  });

  const connect = (name: string, url: string) =>
    t.http
      .post('/api/v1/mcp-connections')
      .set(...bearer(org.keys.admin))
      .send({ server: 'remote', name, url });

  it('stops reading once the pages together pass what one list may weigh: refused, nothing stored', async () => {
    const mcp = await paddedListServer(40, 3_000_000);
    try {
      const res = await connect('padded', mcp.url);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'mcp_connect_failed', reason: 'upstream_unavailable' });
      // Was 40 pages (120 MB) read, and the connection stored.
      expect(mcp.state.listed).toBeLessThanOrEqual(3);
      const list = await t.http
        .get('/api/v1/mcp-connections')
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(list.body.items.map((c: { name: string }) => c.name)).not.toContain('padded');
    } finally {
      await mcp.close();
    }
  });

  it('still reads a list of many pages that weighs what a list may', async () => {
    const mcp = await paddedListServer(40, 100_000);
    try {
      const res = await connect('paged', mcp.url).expect(201);
      expect(res.body.tools).toHaveLength(40);
      expect(mcp.state.listed).toBe(40);
    } finally {
      await mcp.close();
    }
  });
});
