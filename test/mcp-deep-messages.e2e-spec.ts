import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** An object nested `levels` deep (each level one `{`), as a server might send it. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 'x' };
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

const TOOL_TIMEOUT_MS = 20_000;

/**
 * A message an MCP server sends that nests deeper than 128 levels is refused before the SDK parses
 * it, saying so. Before, a tool list nested 1,600 deep overflowed the SDK's recursive checks and the
 * connection was refused as "could not be reached: Maximum call stack size exceeded"; one bound
 * now holds for every message, results included, on either kind of answer. A result of more than
 * 10,000 content items is refused unread, and a list page is checked only for its `tools` being a
 * list before each tool is (attack round 8: a million items, or one schema of 500,000 properties,
 * held the event loop for seconds).
 */
describe('MCP: answers past what is read (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let agentId: string;
  let names = 0;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: TOOL_TIMEOUT_MS } });
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
    server.state.rawToolsList = () => ({ result: { tools: [{ name: 'deep', description: 'Answers as deep as asked.', inputSchema: { type: 'object' } }] } });
    server.state.rawToolsCall = (_name) =>
      items > 0
        ? { result: { content: Array.from({ length: items }, (_, i) => ({ type: 'text', text: `item ${i}` })) } }
        : { result: { content: [{ type: 'text', text: 'here' }], structuredContent: structured ?? nested(depth) } };
    const created = await connect().expect(201);
    await t.http
      .put(`/api/v1/mcp-connections/${created.body.id}/tools/deep/risk`)
      .set(...as('admin'))
      .send({ risk: 'read_only' })
      .expect(200);
    agentId = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'deep', name: 'Deep' })
        .expect(201)
    ).body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection: created.body.id, tools: ['deep'] }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  let depth = 1;
  let items = 0;
  let structured: unknown;
  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const connect = () =>
    t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: `deep-${++names}`, url: server.url });
  const call = () =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: 'deep', arguments: {} })
      .expect(200);

  it.each([
    ['JSON', false],
    ['an event stream', true],
  ])('a tool list nested 1,600 deep, as %s: 422 saying how deep, nothing stored', async (_as, eventStream) => {
    const listed = server.state.rawToolsList;
    server.state.rawAsEventStream = eventStream;
    server.state.rawToolsList = () => ({ result: { tools: [{ name: 'deep', description: 'd', inputSchema: { type: 'object', properties: nested(1600) } }] } });
    try {
      const before = await t.http
        .get('/api/v1/mcp-connections')
        .set(...as('admin'))
        .expect(200);
      const refused = await connect().expect(422);
      expect(refused.body).toMatchObject({ code: 'mcp_connect_failed', reason: 'upstream_unavailable' });
      expect(refused.body.detail).toContain('the MCP server sent a message nesting deeper than 128 levels; not read');
      const after = await t.http
        .get('/api/v1/mcp-connections')
        .set(...as('admin'))
        .expect(200);
      expect(after.body.items).toHaveLength(before.body.items.length);
    } finally {
      server.state.rawToolsList = listed;
      server.state.rawAsEventStream = false;
    }
  });

  it.each([
    ['JSON', false],
    ['an event stream', true],
  ])('a tool result as %s: 100 levels are read, 2,000 fail the call at once with upstream_unavailable', async (_as, eventStream) => {
    server.state.rawAsEventStream = eventStream;
    try {
      depth = 100;
      const read = await call();
      expect(read.body).toMatchObject({ status: 'succeeded', result: { content: [{ type: 'text', text: 'here' }] } });
      expect(JSON.stringify(read.body.result.structuredContent)).toBe(JSON.stringify(nested(100)));

      depth = 2000;
      const started = Date.now();
      const refused = await call();
      expect(refused.body).toMatchObject({
        status: 'failed',
        error: { code: 'upstream_unavailable', message: expect.stringContaining('nesting deeper than 128 levels') },
      });
      // Refused as it arrived, not after the tool's timeout.
      expect(Date.now() - started).toBeLessThan(TOOL_TIMEOUT_MS / 2);
    } finally {
      server.state.rawAsEventStream = false;
    }
  });
  it.each([
    ['JSON', false],
    ['an event stream', true],
  ])('a tool result as %s naming more than 20,000 distinct members fails the call unread; records repeating their names are read', async (_as, eventStream) => {
    server.state.rawAsEventStream = eventStream;
    try {
      // 20,000 members, four names.
      structured = { rows: Array.from({ length: 5_000 }, (_, i) => ({ id: i, name: 'n', email: 'e', city: 'c' })) };
      expect((await call()).body.status).toBe('succeeded');
      // 300 groups of 100 names each: what JSON.parse makes a hidden class for, name by name (0.3 s at 100,000, 7 s at 1,600,000).
      structured = Object.fromEntries(
        Array.from({ length: 300 }, (_, i) => [`g${i}`, Object.fromEntries(Array.from({ length: 100 }, (_, j) => [`k${i}_${j}`, j]))]),
      );
      expect((await call()).body).toMatchObject({
        status: 'failed',
        error: { code: 'upstream_unavailable', message: expect.stringContaining('a message of more than 20000 distinct member names; not read') },
      });
    } finally {
      structured = undefined;
      server.state.rawAsEventStream = false;
    }
  });

  it('a result of more than 10,000 content items fails result_too_large, unread; 10,000 are read', async () => {
    try {
      items = 10_000;
      expect((await call()).body).toMatchObject({ status: 'succeeded' });
      items = 10_001;
      expect((await call()).body).toMatchObject({
        status: 'failed',
        error: { code: 'result_too_large', message: expect.stringContaining('10001 content items, more than 10000') },
      });
    } finally {
      items = 0;
    }
  });

  it('a tools/list answer whose tools are not a list: 422, nothing stored', async () => {
    const listed = server.state.rawToolsList;
    server.state.rawToolsList = () => ({ result: { tools: { deep: {} } } });
    try {
      const refused = await connect().expect(422);
      expect(refused.body.detail).toContain('the answer is not a tools/list result');
    } finally {
      server.state.rawToolsList = listed;
    }
  });
});
