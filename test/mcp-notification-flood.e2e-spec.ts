import { floodingMcpServer } from './support/mcp-flood-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const TIMEOUT_MS = 15_000;

/**
 * docs/security.md, "A node held by one server's notifications": a vendor's server that answers a
 * tool call with an endless stream of notifications. Each costs the node's event loop, for every
 * organization; a call's streams may carry MCP_MAX_MESSAGES_PER_REQUEST (1,000 here) beside the answer.
 */
describe('MCP catalog: a server that floods a call with notifications (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let mcp: Awaited<ReturnType<typeof floodingMcpServer>>;
  let agentId: string;
  const as = (role: keyof TestOrg['keys'], who = org) => bearer(who.keys[role]);

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: TIMEOUT_MS } });
    [org, other, mcp] = await Promise.all([createOrg(t, ['mcp:remote']), createOrg(t), floodingMcpServer()]);
    const connection = await t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: 'flood', url: mcp.url })
      .expect(201);
    for (const tool of ['flood', 'burst']) {
      await t.http
        .put(`/api/v1/mcp-connections/${connection.body.id}/tools/${tool}/risk`)
        .set(...as('admin'))
        .send({ risk: 'read_only' })
        .expect(200);
    }
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: 'flooded', name: 'Flooded' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: '', capabilities: [], mcpServers: [{ connection: connection.body.id, tools: ['flood', 'burst'] }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await mcp.close();
  });

  const call = (tool: string, args: object = {}) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool, arguments: args })
      .expect(200);

  it('a call flooded past the cap is failed upstream_unavailable at once, not read to its timeout; other organizations are served', async () => {
    const started = Date.now();
    const [flooded, others] = await Promise.all([call('flood'), t.http.get('/api/v1/agents').set(...as('viewer', other))]);
    expect(flooded.body).toMatchObject({
      status: 'failed',
      error: { code: 'upstream_unavailable', message: expect.stringMatching(/more than 1000 messages while answering one request/) },
    });
    // Read to the end, the flood lasts until TOOL_TIMEOUT_MS (`timeout`).
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(others.status).toBe(200);
    // The connection is usable again at once (a new session).
    const burst = await call('burst', { count: 500 });
    expect(burst.body).toMatchObject({ status: 'succeeded', result: { content: [{ type: 'text', text: 'done' }] } });
  });
});
