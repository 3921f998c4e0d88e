import { DataSource } from 'typeorm';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, publishMcpAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 16, S-F1: row 134 refuses a body's numbers that PostgreSQL prints far longer than
 * written (`5e-324`: 326 characters), and a model's tool arguments likewise, but a tool's result
 * was stored as `jsonb` whatever its numbers: an MCP server's answer of 1 MiB of `5e-324` was kept
 * whole (offloaded) and read back by `GET /tool-calls/{id}/result` as about 49 MB of JSON, every read.
 */
describe('tool results and tool lists whose numbers PostgreSQL prints far longer than written (e2e, attack round 16 S-F1, S-F2)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let agentId: string;
  let ds: DataSource;
  let answer: unknown;
  let listed: unknown[] = [{ name: 'numbers', description: 'Numbers.', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }];

  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
    server.state.rawToolsList = () => ({ result: { tools: listed } });
    server.state.rawToolsCall = (name) => (name === 'numbers' ? { result: answer } : undefined);
    agentId = await publishMcpAgent(t, org, 'numbers', server.url, ['numbers']);
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const call = () =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'numbers', arguments: {} });
  const tiny = (n: number) => ({ content: [{ type: 'text', text: 'numbers' }], structuredContent: { values: new Array<number>(n).fill(5e-324) } });

  it('fails a result whose numbers would be stored far longer than sent, storing nothing of it', async () => {
    answer = tiny(150_000);
    const res = await call();
    const stored: { n: number }[] = await ds.query(`SELECT count(*)::int AS n FROM tool_call_result WHERE org_id = $1`, [org.id]);
    const printed: { n: number }[] = await ds.query(`SELECT coalesce(max(length(result::text)), 0)::int AS n FROM tool_call WHERE org_id = $1`, [org.id]);
    expect({ stored: stored[0].n, printed: printed[0].n < 2_000_000 }).toEqual({ stored: 0, printed: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'invalid_result' } });
  });

  it('keeps a result of a few such numbers', async () => {
    answer = tiny(100);
    const res = await call();
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('succeeded');
    expect(res.body.result.structuredContent.values).toHaveLength(100);
  });

  it('refuses a tool list whose numbers would be stored far longer than listed, storing nothing (S-F2)', async () => {
    // 70 tools of 8,000 × 5e-324 in their schemas (3.9 MB): stored in 164 KB, each read of the connection 184 MB.
    listed = Array.from({ length: 70 }, (_, i) => ({
      name: `t${i}`,
      description: 'x',
      inputSchema: { type: 'object', properties: { a: { type: 'number', enum: new Array<number>(8_000).fill(5e-324) } } },
    }));
    const before: { n: number }[] = await ds.query(`SELECT count(*)::int AS n FROM mcp_connection WHERE org_id = $1`, [org.id]);
    const res = await t.http
      .post('/api/v1/mcp-connections')
      .set(...bearer(org.keys.admin))
      .send({ server: 'remote', name: 'long-numbers', url: server.url });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 422, code: 'mcp_connect_failed' });
    expect(res.body.detail).toContain('numbers would be stored more than 1048576 characters longer than listed');
    const after: { n: number }[] = await ds.query(`SELECT count(*)::int AS n FROM mcp_connection WHERE org_id = $1`, [org.id]);
    expect(after[0].n).toBe(before[0].n);
  });
});
