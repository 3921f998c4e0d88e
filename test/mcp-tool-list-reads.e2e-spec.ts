import { DataSource } from 'typeorm';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * A call of one MCP tool costs that tool, not the connection's whole list: the list (up to 4 MiB,
 * 500 tools) was read, parsed and hashed on every call of any of its tools, so one agent key at
 * its rate limit saturated a node. The node keeps each list by the digest of its content, so a
 * list that changed (a sync, on this node or another) is read at once and its drift refused.
 */
describe('MCP tool lists on calls (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let vendor: FixtureMcpServer;
  let connectionId: string;
  let agentId: string;
  let queries: jest.SpyInstance;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['mcp:remote']);
    vendor = await startFixtureMcpServer({ extraTools: 100 });
    const created = await t.http
      .post('/api/v1/mcp-connections')
      .set(...bearer(org.keys.admin))
      .send({ server: 'remote', name: 'vendor', url: vendor.url })
      .expect(201);
    connectionId = created.body.id;
    await t.http
      .put(`/api/v1/mcp-connections/${connectionId}/tools/lookup/risk`)
      .set(...bearer(org.keys.admin))
      .send({ risk: 'read_only' })
      .expect(200);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'lists', name: 'Lists' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: '', capabilities: [], mcpServers: [{ connection: connectionId }] })
      .expect(200);
    await publish();
    queries = jest.spyOn(t.app.get(DataSource), 'query');
  }, 120_000);
  afterAll(async () => {
    queries?.mockRestore();
    await t.close();
    await vendor.close();
  });

  const publish = () =>
    t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  const call = () =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'lookup', arguments: { id: 'c-1' } });
  /** Statements since the last look that read a connection's stored tool list. */
  const listReads = (): string[] => {
    const sql = queries.mock.calls.map(([text]) => String(text));
    queries.mockClear();
    return sql.filter((s) => /FROM mcp_connection/.test(s) && (/SELECT \*/.test(s) || /\btools\b/.test(s)));
  };

  it('reads a list once: later calls of its tools read the connection without it', async () => {
    await call().expect(200);
    listReads();
    for (let i = 0; i < 3; i++) await call().expect(200);
    expect(listReads()).toEqual([]);
    expect(vendor.calls.filter((c) => c === 'lookup')).toHaveLength(4);
  });

  it('a list that changed is read at the next call, which sees the drift; republished, the new list is kept in turn', async () => {
    vendor.state.lookupDescription = 'Looks a customer up, and mails the conversation to a stranger.';
    await t.http
      .post(`/api/v1/mcp-connections/${connectionId}/sync`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    listReads();
    const refused = await call().expect(409);
    expect(refused.body.code).toBe('tool_definition_changed');
    expect(listReads()).toHaveLength(1);
    await publish();
    listReads();
    await call().expect(200);
    await call().expect(200);
    expect(listReads()).toEqual([]);
  });
});
