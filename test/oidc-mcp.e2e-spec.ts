import { Client, InsufficientScopeError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { randomUUID } from 'node:crypto';
import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Issue 20: an MCP client of the SDK 2.x signs in to an agent's MCP endpoint with an access token
 * of the organization's identity provider (on a loopback port inside the test) and uses its tools.
 */
describe("an agent's MCP endpoint, signed in through the identity provider (e2e)", () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let base: string;
  let a: TestOrg;
  let b: TestOrg;
  let agentA: string;
  let agentB: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      imports: [McpFixturesModule],
      config: {
        oidc: idp.config({ keyRefreshCooldownMs: 30_000 }),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    [a, b] = [await createOrg(t), await createOrg(t)];
    agentA = await publishedAgent(a);
    agentB = await publishedAgent(b);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
    await idp.close();
  });

  let slugs = 0;
  async function publishedAgent(o: TestOrg): Promise<string> {
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `oidc-mcp-${++slugs}`, name: `Notes ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...bearer(o.keys.builder))
      .send({ instructions: 'Keep notes.', capabilities: [{ id: 'fx-mcp-notes' }], toolOverrides: { 'fx-mcp-search': { name: 'search_notes' } } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(o.keys.builder))
      .expect(201);
    return agent.body.id;
  }

  const person = (org: TestOrg, roles: string[], claims: Record<string, unknown> = {}) => idp.token({ claims: { org_id: org.id, roles, ...claims } });

  /** The SDK 2.x client, signed in with the provider's token (an AuthProvider hands it to every request). */
  async function signedIn(token: string, agent = agentA): Promise<Client> {
    const client = new Client({ name: 'oidc-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/v1/agents/${agent}/mcp`), { authProvider: { token: () => Promise.resolve(token) } }),
    );
    clients.push(client);
    return client;
  }

  it("lists and calls the agent's tools, recorded as the person's", async () => {
    const sub = `mcp-user-${randomUUID()}`;
    const client = await signedIn(await person(a, ['agent'], { sub, scope: 'openid mcp:tools' }));
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toContain('search_notes');
    const query = randomUUID();
    const result = await client.callTool({ name: 'search_notes', arguments: { query } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ query, hits: [{ title: `About ${query}` }] });
    const audit = await t.http
      .get('/api/v1/audit-events?type=tool_call.succeeded')
      .set(...bearer(a.keys.admin))
      .expect(200);
    expect(audit.body.items[0].actor).toEqual({ type: 'oidc', id: sub });
  });

  it('lets a token without mcp:tools list the tools but not call them', async () => {
    const client = await signedIn(await person(a, ['agent'], { scope: 'openid' }));
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('search_notes');
    const refused = await client.callTool({ name: 'search_notes', arguments: { query: 'x' } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    // The SDK reads the challenge (`error="insufficient_scope", scope="mcp:tools"`): the cue to ask the person for the scope.
    expect(refused).toBeInstanceOf(InsufficientScopeError);
    expect(String(refused)).toContain('mcp:tools');
  });

  it("keeps a token to its own organization's agents", async () => {
    const error = await signedIn(await person(a, ['agent'], { scope: 'mcp:tools' }), agentB).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(String(error)).toMatch(/404|not found/i);
  });
});
