import { startFixtureMcpServer, FixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const SECRET = 'Bearer sk-live-Vq7Rt2XwK9pLm4';
const EMOJI = '\u{1F600}';
const tool = (fields: Record<string, unknown> = {}) => ({ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' }, ...fields });

/**
 * What a vendor's server writes into a tool list or an error is its text, not ours: it is stored
 * and shown to every reader of the connection and offered to agents. Before, a list echoing the
 * connection's credential was shown as is (to a viewer key, to the agent and its model), and text
 * PostgreSQL cannot store (a description cut through an emoji, an error message with U+0000)
 * answered 500 and left the connection `ready` with no audit event.
 */
describe('MCP connections: text a server sends (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let names = 0;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });
  afterEach(() => {
    server.state.rawToolsList = undefined;
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const connect = (credentials?: Record<string, string>) =>
    t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: `text-${++names}`, url: server.url, ...(credentials ? { credentials } : {}) });
  const sync = (id: string) => t.http.post(`/api/v1/mcp-connections/${id}/sync`).set(...as('admin'));
  const syncEvents = async (id: string) =>
    (
      await t.http
        .get('/api/v1/audit-events?type=mcp_connection.synced&limit=200')
        .set(...as('admin'))
        .expect(200)
    ).body.items.filter((e: { target: { id: string } }) => e.target.id === id);

  it('a tool list that echoes the credential is stored redacted: no answer, to the admin, a viewer or the agent, holds it', async () => {
    server.state.rawToolsList = (authorization) => ({
      result: {
        tools: [
          tool({
            title: `auth ${authorization}`,
            description: `You called me with ${authorization}`,
            inputSchema: { type: 'object', properties: { x: { type: 'string', default: authorization }, [`${authorization}`]: { type: 'string' } } },
            annotations: { title: `token ${authorization?.split(' ')[1]}` },
          }),
        ],
      },
    });
    const created = await connect({ authorization: SECRET }).expect(201);
    expect(server.authorizations).toContain(SECRET);
    expect(created.body.tools[0]).toMatchObject({
      title: 'auth [redacted]',
      description: 'You called me with [redacted]',
      inputSchema: { properties: { x: { default: '[redacted]' }, '[redacted]': { type: 'string' } } },
      annotations: { title: 'token [redacted]' },
    });
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: 'echoes', name: 'Echoes' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection: created.body.id, tools: ['echo'] }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...as('builder'))
      .expect(201);
    const answers = [
      created.text,
      (await sync(created.body.id).expect(200)).text,
      (
        await t.http
          .get(`/api/v1/mcp-connections/${created.body.id}`)
          .set(...as('viewer'))
          .expect(200)
      ).text,
      (
        await t.http
          .get(`/api/v1/agents/${agent.body.id}/versions/latest/tools`)
          .set(...as('agent'))
          .expect(200)
      ).text,
      (
        await t.http
          .get('/api/v1/audit-events?limit=200')
          .set(...as('admin'))
          .expect(200)
      ).text,
    ];
    for (const text of answers) expect(text).not.toContain('sk-live');
    expect(answers[3]).toContain('You called me with [redacted]');
  });

  it('a description or title cut through an emoji is stored well-formed: 201 on connect, 200 ready on sync', async () => {
    const cut = { description: 'a'.repeat(9999) + EMOJI + 'b', title: 'a'.repeat(499) + EMOJI + 'b' };
    server.state.rawToolsList = () => ({ result: { tools: [tool(cut)] } });
    const created = await connect().expect(201);
    expect(created.body.tools[0].description).toBe('a'.repeat(9999));
    expect(created.body.tools[0].title).toBe('a'.repeat(499));

    server.state.rawToolsList = () => ({ result: { tools: [tool()] } });
    const clean = await connect().expect(201);
    server.state.rawToolsList = () => ({ result: { tools: [tool(cut)] } });
    const synced = await sync(clean.body.id).expect(200);
    expect(synced.body).toMatchObject({ status: 'ready', tools: [{ name: 'echo', description: 'a'.repeat(9999), title: 'a'.repeat(499) }] });
    expect(await syncEvents(clean.body.id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ status: 'ready', changed: ['echo'] }) })]);
  });

  it.each([
    ['U+0000', 'broken\u0000list', 'broken\uFFFDlist'],
    ['an emoji at the cut', 'a'.repeat(960) + EMOJI, 'a'.repeat(960)],
  ])('a tools/list error holding %s: sync is 200 with status error and its message, the last good list kept, audited', async (_what, message, shown) => {
    const created = await connect().expect(201);
    server.state.rawToolsList = () => ({ error: { code: -32000, message } });
    const synced = await sync(created.body.id).expect(200);
    expect(synced.body).toMatchObject({ status: 'error', error: { code: 'tool_error', message: expect.stringContaining(shown) }, tools: created.body.tools });
    expect(synced.body.error.message.isWellFormed()).toBe(true);
    const read = await t.http
      .get(`/api/v1/mcp-connections/${created.body.id}`)
      .set(...as('viewer'))
      .expect(200);
    expect(read.body).toMatchObject({ status: 'error', error: synced.body.error });
    expect(await syncEvents(created.body.id)).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ trigger: 'sync', status: 'error', error: synced.body.error }) }),
    ]);
  });
});
