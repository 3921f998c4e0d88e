import { startFixtureMcpServer, FixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

// One app and one fixture server for the file; each describe has its own organization.
let t: TestApp;
let server: FixtureMcpServer;

beforeAll(async () => {
  t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
  server = await startFixtureMcpServer();
}, 240_000);
afterAll(async () => {
  await server.close();
  await t.close();
});

/**
 * A vendor's server names its tools as it likes (up to 128 characters, U+0000 aside), and a
 * version may offer such a tool under another name (toolOverrides). The switch that disables an
 * MCP tool took only ids without control characters, so a tool named with a tab or U+0001 could be
 * offered and called but never disabled: `404 unknown_tool` (attack round 10, E-F4).
 */
describe('disabling MCP tools named with control characters (e2e)', () => {
  let org: TestOrg;
  let n = 0;

  beforeAll(async () => {
    org = await createOrg(t, ['mcp:remote']);
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);

  it.each([
    ['a tab', 'echo\tall'],
    ['U+0001', 'echo\u0001'],
    ['a line break', 'echo\nall'],
    ['U+001F', '\u001f'],
  ])('a tool named with %s is disabled, and its calls are refused tool_disabled', async (_what, name) => {
    server.state.rawToolsList = () => ({
      result: { tools: [{ name, description: 'Echoes.', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] },
    });
    const connection = `ctl-${++n}`;
    const created = await t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: connection, url: server.url })
      .expect(201);
    expect(created.body.tools.map((tool: { name: string }) => tool.name)).toEqual([name]);
    const toolId = `${connection}/${name}`;
    const agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: `ctl-agent-${n}`, name: 'Ctl' })
        .expect(201)
    ).body.id as string;
    await t.http
      .put(`/api/v1/agents/${agent}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection: created.body.id }], toolOverrides: { [toolId]: { name: 'echo_ctl' } } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent}/publish`)
      .set(...as('builder'))
      .expect(201);
    const call = () =>
      t.http
        .post(`/api/v1/agents/${agent}/tool-calls`)
        .set(...as('agent'))
        .send({ tool: 'echo_ctl', arguments: {} });
    expect((await call()).status).not.toBe(403);

    const disabled = await t.http
      .put(`/api/v1/tools/mcp/${encodeURIComponent(toolId)}/disabled`)
      .set(...as('admin'))
      .send({ disabled: true, reason: 'incident' })
      .expect(200);
    expect(disabled.body).toMatchObject({ capabilityId: 'mcp', toolId, disabled: true, listed: true });
    expect((await call().expect(403)).body.code).toBe('tool_disabled');
    await t.http
      .put(`/api/v1/tools/mcp/${encodeURIComponent(toolId)}/disabled`)
      .set(...as('admin'))
      .send({ disabled: false })
      .expect(200);
    expect((await call()).status).not.toBe(403);
  });

  it('still refuses U+0000, which no stored name holds and PostgreSQL cannot store', async () => {
    const res = await t.http
      .put(`/api/v1/tools/mcp/${encodeURIComponent('ctl-1/a\u0000b')}/disabled`)
      .set(...as('admin'))
      .send({ disabled: true });
    expect(res.status).toBeLessThan(500);
    expect(res.status).toBeGreaterThanOrEqual(400);
  });
});

/**
 * A switch on a name no connection lists stops nothing: a look-alike of a listed tool's name (a
 * zero-width space, a Cyrillic letter) answered `200 disabled: true` while the real tool kept
 * running (attack round 11, G-F5). Every switch now says whether its tool is listed.
 */
describe('tool switches say whether their tool is listed (e2e)', () => {
  let org: TestOrg;

  beforeAll(async () => {
    org = await createOrg(t, ['mcp:remote']);
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const put = (capabilityId: string, toolId: string, disabled: boolean) =>
    t.http
      .put(`/api/v1/tools/${capabilityId}/${encodeURIComponent(toolId)}/disabled`)
      .set(...as('admin'))
      .send({ disabled });

  it('answers listed: true for a listed MCP tool and a capability tool, false for a look-alike, a gone connection and an unlisted name', async () => {
    server.state.rawToolsList = () => ({
      result: { tools: [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] },
    });
    await t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: 'vendor', url: server.url })
      .expect(201);

    expect((await put('mcp', 'vendor/echo', true).expect(200)).body).toMatchObject({ disabled: true, listed: true });
    expect((await put('mcp', 'vendor/ec\u200bho', true).expect(200)).body).toMatchObject({ disabled: true, listed: false });
    expect((await put('mcp', 'vendor/\u0435cho', true).expect(200)).body).toMatchObject({ listed: false });
    expect((await put('mcp', 'nowhere/echo', true).expect(200)).body).toMatchObject({ listed: false });
    expect((await put('memory-write', 'remember', true).expect(200)).body).toMatchObject({ capabilityId: 'memory-write', listed: true });
    // Enabling answers it too: the admin learns the name they meant to free was not the one listed.
    expect((await put('mcp', 'vendor/ec\u200bho', false).expect(200)).body).toMatchObject({ disabled: false, listed: false });

    const list = await t.http
      .get('/api/v1/tools/disabled')
      .set(...as('viewer'))
      .expect(200);
    const listed = Object.fromEntries(
      list.body.items.map((s: { capabilityId: string; toolId: string; listed: boolean }) => [`${s.capabilityId}:${s.toolId}`, s.listed]),
    );
    expect(listed).toEqual({ 'memory-write:remember': true, 'mcp:nowhere/echo': false, 'mcp:vendor/echo': true, 'mcp:vendor/\u0435cho': false });

    // The connection gone, its switches stay and say so.
    const connections = await t.http
      .get('/api/v1/mcp-connections')
      .set(...as('admin'))
      .expect(200);
    await t.http
      .delete(`/api/v1/mcp-connections/${connections.body.items[0].id}`)
      .set(...as('admin'))
      .expect(204);
    const after = await t.http
      .get('/api/v1/tools/disabled')
      .set(...as('viewer'))
      .expect(200);
    expect(after.body.items.find((s: { toolId: string }) => s.toolId === 'vendor/echo')).toMatchObject({ listed: false });
  });
});
