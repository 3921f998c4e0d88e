import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * API.md "MCP catalog": "a server cannot change what an agent was approved to use". A pin names
 * the connection it was pinned from: another bound connection that later lists an exact copy of
 * a pinned tool neither takes its calls nor makes the version offer two tools of one name.
 */
describe('an MCP tool copied by another bound connection after publish (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let community: FixtureMcpServer;
  let trusted: FixtureMcpServer;
  let communityId: string;
  let trustedId: string;
  let agentId: string;

  beforeAll(async () => {
    t = await createTestApp({ config: { mcpToolsTtlSeconds: 0 } });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t, ['mcp:remote']);
    // `archive` is the same code on both servers: the copy is exact (description, schema, annotations).
    [community, trusted] = await Promise.all([startFixtureMcpServer({ archiveListed: false }), startFixtureMcpServer()]);
    const connect = async (name: string, url: string) =>
      (
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...bearer(org.keys.admin))
          .send({ server: 'remote', name, url })
          .expect(201)
      ).body.id as string;
    communityId = await connect('community', community.url);
    trustedId = await connect('trusted-mail', trusted.url);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'mail-agent', name: 'Mail' })
      .expect(201);
    agentId = agent.body.id;
    // The community connection first, so that its tools come first in the offer.
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: '', capabilities: [], mcpServers: [{ connection: communityId }, { connection: trustedId, tools: ['archive'] }] })
      .expect(200);
    const published = await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    expect(Object.keys(published.body.toolDigests)).toContain('archive');

    community.state.archiveListed = true;
    await t.http
      .post(`/api/v1/mcp-connections/${communityId}/sync`)
      .set(...bearer(org.keys.admin))
      .expect(200);
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([community.close(), trusted.close()]);
  });

  it('offers the name once, from the connection it was pinned from; the copy shows as drift', async () => {
    const tools = await t.http
      .get(`/api/v1/agents/${agentId}/versions/latest/tools`)
      .set(...bearer(org.keys.agent))
      .expect(200);
    const archives = tools.body.items.filter((x: { name: string }) => x.name === 'archive');
    expect(archives).toEqual([expect.objectContaining({ toolId: 'trusted-mail/archive', source: { connectionId: trustedId, server: 'remote' } })]);
    const version = await t.http
      .get(`/api/v1/agents/${agentId}/versions/latest`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(version.body.drift).toEqual([{ tool: 'archive', reason: 'added', toolId: 'community/archive' }]);
  });

  it("the agent's MCP endpoint lists the name once", async () => {
    const client = new Client({ name: 'shadowing-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${await t.app.getUrl()}/api/v1/agents/${agentId}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } },
      }),
    );
    try {
      const listed = (await client.listTools()).tools.filter((x) => x.name === 'archive');
      expect(listed.map((x) => x._meta?.['capability-platform/tool'])).toEqual([expect.objectContaining({ toolId: 'trusted-mail/archive' })]);
    } finally {
      await client.close();
    }
  });

  it('a call of the pinned name runs on the server it was pinned from, with its arguments', async () => {
    const asked = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'archive', arguments: { id: 'ceo@corp' } })
      .expect(202);
    expect(asked.body).toMatchObject({ toolId: 'trusted-mail/archive', status: 'pending_approval' });
    const approved = await t.http
      .post(`/api/v1/approvals/${asked.body.approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);
    expect(approved.body.toolCall).toMatchObject({ status: 'succeeded', toolId: 'trusted-mail/archive' });
    expect(trusted.calls).toEqual(['archive']);
    expect(community.calls).toEqual([]);
  });

  it('once the pinned server stops listing the tool, the copy is drift `added` and the pinned one `removed`, and no call runs', async () => {
    trusted.state.archiveListed = false;
    await t.http
      .post(`/api/v1/mcp-connections/${trustedId}/sync`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    const version = await t.http
      .get(`/api/v1/agents/${agentId}/versions/latest`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    // Not `changed`: the tool that now holds the name is another server's, not a new definition of the pinned one.
    expect(version.body.drift).toEqual([
      { tool: 'archive', reason: 'removed' },
      { tool: 'archive', reason: 'added', toolId: 'community/archive' },
    ]);
    const refused = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'archive', arguments: { id: 'ceo@corp' } })
      .expect(409);
    expect(refused.body.code).toBe('tool_definition_changed');
    expect(community.calls).toEqual([]);
  });
});
