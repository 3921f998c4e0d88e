import { DataSource } from 'typeorm';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, publishMcpAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 16, S-F3 (row 125's class, for results): `GET /tool-calls/{id}/result` answers the
 * whole result kept apart (offloaded, up to 16 MiB), and the node parsed it from the row and wrote
 * it again for every read: an MCP server's 11.2 MB result of 1,400,000 small objects held the event
 * loop 337 to 568 ms a read (any viewer key, as often as its rate limit allows). The answer is now
 * made by the database and sent as it is.
 */
describe('the whole result of a call, read (e2e, attack round 16 S-F3)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let agentId: string;
  let answer: unknown;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
    server.state.rawToolsList = () => ({ result: { tools: [{ name: 'rows', description: 'Rows.', inputSchema: { type: 'object' } }] } });
    server.state.rawToolsCall = (name) => (name === 'rows' ? { result: answer } : undefined);
    agentId = await publishMcpAgent(t, org, 'rows', server.url, ['rows']);
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  it('answers an offloaded result as the database writes it, parsing none of it on the node', async () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => ({ a: i % 10, b: 'x', c: 1e-7 }));
    answer = { content: [{ type: 'text', text: 'rows \u2603' }], structuredContent: { rows } };
    const call = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'rows', arguments: {} })
      .expect(200);
    expect(call.body).toMatchObject({ status: 'succeeded', resultTruncated: true });
    // What the node's statements answered: before the fix the whole result (2.9 MB of JSON) came back parsed, on every read.
    const ds = t.app.get(DataSource);
    const query = ds.query.bind(ds);
    const answered: unknown[] = [];
    const spy = jest.spyOn(ds, 'query').mockImplementation(async (...args: Parameters<DataSource['query']>) => {
      const rows: unknown = await query(...args);
      answered.push(rows);
      return rows;
    });
    let read;
    try {
      read = await t.http
        .get(`/api/v1/tool-calls/${call.body.id}/result`)
        .set(...bearer(org.keys.viewer))
        .buffer(true)
        .parse((res, done) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => done(null, text));
        });
    } finally {
      spy.mockRestore();
    }
    const parsed = answered
      .flatMap((rows) => (Array.isArray(rows) ? rows : []))
      .filter((r) => typeof (r as { result?: unknown })?.result === 'object' && (r as { result?: unknown }).result !== null);
    expect(parsed.length).toBe(0);
    expect(read.status).toBe(200);
    expect(read.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(read.body as string)).toEqual({ toolCallId: call.body.id, result: answer });
  });

  it('refuses a result kept before S-F1 that the database prints past 64 MiB, and the node goes on', async () => {
    answer = { content: [{ type: 'text', text: 'rows' }], structuredContent: { rows: Array.from({ length: 20_000 }, (_, i) => ({ a: i })) } };
    const call = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'rows', arguments: {} })
      .expect(200);
    // As one stored before tool results were held to their numbers' growth: 14 MB of 5e-324 made 656 MB, whose read ended the node.
    await t.app
      .get(DataSource)
      .query(`UPDATE tool_call_result SET result = (SELECT jsonb_agg(5e-324::numeric) FROM generate_series(1, 250000)) WHERE tool_call_id = $1`, [
        call.body.id,
      ]);
    const read = await t.http
      .get(`/api/v1/tool-calls/${call.body.id}/result`)
      .set(...bearer(org.keys.viewer))
      .expect(404);
    expect(read.body).toMatchObject({ code: 'result_not_available' });
    await t.http.get('/health').expect(200);
  });

  it('answers a result kept whole, and refuses one cut without its whole, as before', async () => {
    answer = { content: [{ type: 'text', text: 'small' }] };
    const call = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'rows', arguments: {} })
      .expect(200);
    const read = await t.http
      .get(`/api/v1/tool-calls/${call.body.id}/result`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(read.body).toEqual({ toolCallId: call.body.id, result: answer });
    await t.http
      .get('/api/v1/tool-calls/00000000-0000-4000-8000-000000000000/result')
      .set(...bearer(org.keys.viewer))
      .expect(404);
    const other = await createOrg(t);
    await t.http
      .get(`/api/v1/tool-calls/${call.body.id}/result`)
      .set(...bearer(other.keys.viewer))
      .expect(404);
  });
});
