import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Every build of a version (each call of any of its tools, each read of its versions, tools or
 * manifest) reads and digests the tool lists of the connections it binds. An agent may bind 20
 * connections and a list may hold 4 MiB: with 80 MiB bound, a call took 2.5 to 7 s and a read of
 * the version's tools held another organization's `GET /agents` for seconds (attack round 12,
 * J-F1). The lists one version binds now weigh at most 4 MiB together (BOUND_LISTS_MAX_BYTES):
 * publish refuses more, and a version whose lists grew past it since offers nothing from the
 * connections that no longer fit (drift, calls refused) instead of reading them.
 */
describe('what the tool lists of one version weigh together (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let alpha: FixtureMcpServer;
  let beta: FixtureMcpServer;
  let alphaId: string;
  let betaId: string;
  let agentId: string;

  /** 230 tools of 9,500 characters of description: about 2.2 MB of stored JSON, half the bound and a bit. */
  const heavy = (prefix: string) =>
    Array.from({ length: 230 }, (_, i) => ({
      name: `${prefix}_${i}`,
      description: `${prefix} ${i} ${'x'.repeat(9_500)}`,
      inputSchema: { type: 'object' },
    }));
  const light = [{ name: 'b_small', description: 'b small', inputSchema: { type: 'object' } }];
  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const call = (tool: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool, arguments: {} });

  beforeAll(async () => {
    // TTL 0: every call lists its connections again first (the bound's lists, not the others).
    t = await createTestApp({ config: { mcpToolsTtlSeconds: 0 } });
    org = await createOrg(t, ['mcp:remote']);
    [alpha, beta] = await Promise.all([startFixtureMcpServer(), startFixtureMcpServer()]);
    alpha.state.rawToolsList = () => ({ result: { tools: heavy('a') } });
    beta.state.rawToolsList = () => ({ result: { tools: light } });
    const connect = async (name: string, url: string) =>
      (
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...as('admin'))
          .send({ server: 'remote', name, url })
          .expect(201)
      ).body.id as string;
    alphaId = await connect('alpha', alpha.url);
    betaId = await connect('beta', beta.url);
    agentId = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'bound-lists', name: 'Bound lists' })
        .expect(201)
    ).body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: '', capabilities: [], mcpServers: [{ connection: alphaId }, { connection: betaId }] })
      .expect(200);
  }, 240_000);
  afterAll(async () => {
    await t.close();
    await Promise.all([alpha.close(), beta.close()]);
  });

  it('lists within the bound together are published and offered', async () => {
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
    expect((await call('a_1')).status).toBe(202);
    expect((await call('b_small')).status).toBe(202);
  });

  it('a connection whose list took them past it since offers nothing: its pinned tools drift and their calls are refused', async () => {
    beta.state.rawToolsList = () => ({ result: { tools: [...light, ...heavy('b')] } });
    await t.http
      .post(`/api/v1/mcp-connections/${betaId}/sync`)
      .set(...as('admin'))
      .expect(200)
      .expect((r) => expect(r.body.status).toBe('ready'));
    const listed = beta.listRequests.length;
    const refused = await call('b_small').expect(409);
    expect(refused.body.code).toBe('tool_definition_changed');
    // Not read, and not listed again either.
    expect(beta.listRequests).toHaveLength(listed);
    // The connection bound first still fits, and its tools are called as before.
    expect((await call('a_1')).status).toBe(202);
    const version = await t.http
      .get(`/api/v1/agents/${agentId}/versions/1`)
      .set(...as('viewer'))
      .expect(200);
    expect(version.body.drift).toContainEqual({ tool: 'b_small', reason: 'removed' });
    const tools = await t.http
      .get(`/api/v1/agents/${agentId}/versions/1/tools?limit=200`)
      .set(...as('viewer'))
      .expect(200);
    expect(tools.body.items.some((tool: { name: string }) => tool.name.startsWith('b_'))).toBe(false);
  });

  it('a list alone is always bound, even one weighing more bytes than the bound (storable by its characters)', async () => {
    // 230 tools of 9,500 two-byte characters: 2.2 M characters, under a list's cap; 4.4 MB stored, past the bound.
    const wide = Array.from({ length: 230 }, (_, i) => ({ name: `w_${i}`, description: `${i} ${'é'.repeat(9_500)}`, inputSchema: { type: 'object' } }));
    const gamma = await startFixtureMcpServer();
    try {
      gamma.state.rawToolsList = () => ({ result: { tools: wide } });
      const gammaId = (
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...as('admin'))
          .send({ server: 'remote', name: 'gamma', url: gamma.url })
          .expect(201)
      ).body.id as string;
      const alone = (
        await t.http
          .post('/api/v1/agents')
          .set(...as('builder'))
          .send({ slug: 'wide-list', name: 'Wide list' })
          .expect(201)
      ).body.id;
      await t.http
        .put(`/api/v1/agents/${alone}/draft`)
        .set(...as('builder'))
        .send({ instructions: '', capabilities: [], mcpServers: [{ connection: gammaId }] })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${alone}/publish`)
        .set(...as('builder'))
        .expect(201);
      const called = await t.http
        .post(`/api/v1/agents/${alone}/tool-calls`)
        .set(...as('agent'))
        .send({ tool: 'w_7', arguments: {} });
      expect(called.status).toBe(202);
    } finally {
      await gamma.close();
    }
  });

  it('publish refuses lists past the bound together, naming the connection that passes it, and publishes nothing', async () => {
    const validated = await t.http
      .post(`/api/v1/agents/${agentId}/draft/validate`)
      .set(...as('builder'))
      .expect(200);
    expect(validated.body.valid).toBe(false);
    expect(validated.body.errors).toEqual([expect.objectContaining({ path: 'mcpServers[1].connection', code: 'tool_lists_too_large' })]);
    const refused = await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(422);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'mcpServers[1].connection', code: 'tool_lists_too_large' })]);
    const agent = await t.http
      .get(`/api/v1/agents/${agentId}`)
      .set(...as('viewer'))
      .expect(200);
    expect(agent.body.latestVersion).toBe(1);
  });
});
