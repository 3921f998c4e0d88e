import { createServer } from 'node:net';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * API.md "MCP catalog": `PUT /mcp-connections/{id}/url` moves a connection, bound by a published
 * version or not, to another address of its server; the tools are listed there before anything
 * changes, and calls go there from then on.
 */
describe('MCP connections: moving to another URL (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let before: FixtureMcpServer;
  let after: FixtureMcpServer;
  let connectionId: string;
  let agentId: string;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    other = await createOrg(t, ['mcp:remote']);
    before = await startFixtureMcpServer({ archiveListed: true });
    // The server's new address lists one tool less (and, for the URL echo, one more).
    after = await startFixtureMcpServer({ archiveListed: false, echoRequestUrl: true });
    connectionId = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'vendor', url: before.url })
        .expect(201)
    ).body.id;
    agentId = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'mover', name: 'Mover' })
        .expect(201)
    ).body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection: connectionId, tools: ['lookup'] }] })
      .expect(200);
    await t.http
      .put(`/api/v1/mcp-connections/${connectionId}/tools/lookup/risk`)
      .set(...as('admin'))
      .send({ risk: 'read_only' })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
  }, 240_000);
  afterAll(async () => {
    await before.close();
    await after.close();
    await t.close();
  });

  const as = (role: keyof TestOrg['keys'], o: TestOrg = org) => bearer(o.keys[role]);
  const move = (url: unknown, role: keyof TestOrg['keys'] = 'admin', id = connectionId) =>
    t.http
      .put(`/api/v1/mcp-connections/${id}/url`)
      .set(...as(role))
      .send({ url });
  const lookup = () =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: 'lookup', arguments: { id: 'c-1' } })
      .expect(200);
  const connection = async () =>
    (
      await t.http
        .get(`/api/v1/mcp-connections/${connectionId}`)
        .set(...as('viewer'))
        .expect(200)
    ).body;

  it('refuses what it cannot reach or may not, and changes nothing: the bound agent keeps calling the old address', async () => {
    const unchanged = await connection();
    const dead = await move(`http://127.0.0.1:${await closedPort()}/mcp`).expect(422);
    expect(dead.body).toMatchObject({
      code: 'mcp_connect_failed',
      reason: 'upstream_unavailable',
      detail: expect.stringContaining('The connection was not changed.'),
    });
    const refused = await move('ftp://127.0.0.1/mcp').expect(422);
    expect(refused.body).toMatchObject({ code: 'egress_refused', errors: [expect.objectContaining({ path: 'url' })] });
    for (const [url, path] of [
      ['not a url', 'url'],
      ['', 'url'],
      [null, 'url'],
      [`http://127.0.0.1/${'a'.repeat(2100)}`, 'url'],
    ] as const) {
      const bad = await move(url).expect(400);
      expect(bad.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    }
    await move(after.url, 'viewer').expect(403);
    await move(after.url, 'builder').expect(403);
    // Another organization's connection is not there for this key.
    await t.http
      .put(`/api/v1/mcp-connections/${connectionId}/url`)
      .set(...as('admin', other))
      .send({ url: after.url })
      .expect(404);
    await move(after.url, 'admin', '00000000-0000-4000-8000-000000000000').expect(404);
    expect(await connection()).toEqual(unchanged);
    const calls = before.calls.length;
    expect((await lookup()).body).toMatchObject({ status: 'succeeded' });
    expect(before.calls.length).toBe(calls + 1);
  });

  it('moves a connection a published version binds: the tools listed there are stored, audited with the change, and calls go there', async () => {
    const sealed = `${after.url}?api_key=sk-moved-Vq7Lp2`;
    const moved = await move(sealed).expect(200);
    // The token in the query is a credential: never shown.
    expect(moved.body).toMatchObject({ id: connectionId, url: `${after.url}?api_key=[redacted]`, status: 'ready' });
    expect(moved.text).not.toContain('sk-moved-Vq7Lp2');
    const names = moved.body.tools.map((tool: { name: string }) => tool.name);
    expect(names).toContain('whereami');
    expect(names).not.toContain('archive');
    // A person's risk decision is the connection's, kept across the move.
    expect(moved.body.tools.find((tool: { name: string }) => tool.name === 'lookup')).toMatchObject({ risk: 'read_only', riskSource: 'admin' });
    expect(await connection()).toEqual(moved.body);

    const [event] = (
      await t.http
        .get('/api/v1/audit-events?type=mcp_connection.url_updated')
        .set(...as('admin'))
        .expect(200)
    ).body.items;
    expect(event).toMatchObject({
      actor: { type: 'api_key', id: org.keyIds.admin },
      target: { type: 'mcp_connection', id: connectionId },
      data: { name: 'vendor', url: `${after.url}?api_key=[redacted]`, previousUrl: before.url, added: ['whereami'], removed: ['archive'] },
    });
    expect(JSON.stringify(event)).not.toContain('sk-moved-Vq7Lp2');

    const beforeCalls = before.calls.length;
    expect((await lookup()).body).toMatchObject({ status: 'succeeded' });
    expect(before.calls.length).toBe(beforeCalls);
    expect(after.calls).toContain('lookup');
    // The new server got the whole URL, token included.
    expect(after.requestUrls.at(-1)).toContain('api_key=sk-moved-Vq7Lp2');
  });

  it('a sync that listed the old address, answered after the move, does not store that list over the new one', async () => {
    const racer = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'racer', url: before.url })
        .expect(201)
    ).body.id;
    before.state.listDelayMs = 1500;
    try {
      const asked = before.listRequests.length;
      const syncing = t.http
        .post(`/api/v1/mcp-connections/${racer}/sync`)
        .set(...as('admin'))
        .then((res) => res);
      await until(
        async () => before.listRequests.length,
        (n) => n > asked,
      );
      const moved = await move(after.url, 'admin', racer).expect(200);
      expect(moved.body.tools.map((tool: { name: string }) => tool.name)).toContain('whereami');
      const synced = await syncing;
      // The sync answers the connection as it is: at its new address, with the tools listed there.
      expect(synced.status).toBe(200);
      expect(synced.body).toMatchObject({ url: after.url, status: 'ready' });
      const now = (
        await t.http
          .get(`/api/v1/mcp-connections/${racer}`)
          .set(...as('viewer'))
          .expect(200)
      ).body;
      expect(now).toEqual(moved.body);
    } finally {
      before.state.listDelayMs = undefined;
    }
  });

  it('audits a move against the list it replaces, when a sync stored another while the new address was listed', async () => {
    const old = await startFixtureMcpServer({ archiveListed: true });
    const slow = await startFixtureMcpServer({ archiveListed: true, echoRequestUrl: true });
    try {
      const id = (
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...as('admin'))
          .send({ server: 'remote', name: 'relisted', url: old.url })
          .expect(201)
      ).body.id;
      slow.state.listDelayMs = 1500;
      const asked = slow.listRequests.length;
      const moving = move(slow.url, 'admin', id).then((res) => res);
      await until(
        async () => slow.listRequests.length,
        (n) => n > asked,
      );
      // The old address drops a tool and a person syncs: stored while the move waits for its list.
      old.state.archiveListed = false;
      const synced = await t.http
        .post(`/api/v1/mcp-connections/${id}/sync`)
        .set(...as('admin'))
        .expect(200);
      expect(synced.body.tools.map((tool: { name: string }) => tool.name)).not.toContain('archive');
      expect((await moving).status).toBe(200);
      const events = (
        await t.http
          .get('/api/v1/audit-events?type=mcp_connection.url_updated')
          .set(...as('admin'))
          .expect(200)
      ).body.items.filter((e: { target: { id: string } }) => e.target.id === id);
      // Against the list the move replaced (without archive), not the one it started from.
      expect(events).toMatchObject([{ data: { url: slow.url, previousUrl: old.url, added: ['archive', 'whereami'], removed: [], changed: [] } }]);
    } finally {
      await old.close();
      await slow.close();
    }
  });

  it('sends stored credentials only to their origin: another origin needs the credentials for it (attack round 11, F-F2)', async () => {
    const keyed = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'keyed', url: before.url, credentials: { authorization: 'Bearer vendor-token-Zq81' } })
        .expect(201)
    ).body.id;
    const unchanged = (
      await t.http
        .get(`/api/v1/mcp-connections/${keyed}`)
        .set(...as('viewer'))
        .expect(200)
    ).body;
    const heard = after.authorizations.length;
    // Another origin (another port) without credentials: refused before anything is sent there.
    const refused = await move(after.url, 'admin', keyed).expect(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'credentials', code: 'required' })]);
    expect(after.authorizations.slice(heard)).toEqual([]);
    const bad = await t.http
      .put(`/api/v1/mcp-connections/${keyed}/url`)
      .set(...as('admin'))
      .send({ url: after.url, credentials: { authorization: 'x\ny', cookie: 'c' } })
      .expect(400);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['credentials.authorization', 'credentials.cookie']);
    expect(bad.text).not.toContain('x\\ny');
    expect(
      (
        await t.http
          .get(`/api/v1/mcp-connections/${keyed}`)
          .set(...as('viewer'))
          .expect(200)
      ).body,
    ).toEqual(unchanged);
    expect(after.authorizations.slice(heard)).toEqual([]);

    // The same origin elsewhere on it: the stored credentials go along.
    const samePlace = await move(`${before.url}?v=2`, 'admin', keyed).expect(200);
    expect(samePlace.body.credentialNames).toEqual(['authorization']);
    expect(before.authorizations.at(-1)).toBe('Bearer vendor-token-Zq81');

    // Another origin with the credentials for it: sent there, stored in place of the old ones, audited by name.
    const moved = await t.http
      .put(`/api/v1/mcp-connections/${keyed}/url`)
      .set(...as('admin'))
      .send({ url: after.url, credentials: { authorization: 'Bearer new-place-Kd30' } })
      .expect(200);
    expect(moved.body).toMatchObject({ url: after.url, credentialNames: ['authorization'], status: 'ready' });
    expect(after.authorizations.slice(heard).every((a) => a === 'Bearer new-place-Kd30')).toBe(true);
    expect(after.authorizations.slice(heard).length).toBeGreaterThan(0);
    const [event] = (
      await t.http
        .get('/api/v1/audit-events?type=mcp_connection.url_updated')
        .set(...as('admin'))
        .expect(200)
    ).body.items;
    expect(event.data).toMatchObject({ name: 'keyed', url: after.url, credentialNames: ['authorization'] });
    expect(JSON.stringify(event)).not.toMatch(/vendor-token|new-place/);
    // `{}`: none any more, also to move back.
    const bare = await t.http
      .put(`/api/v1/mcp-connections/${keyed}/url`)
      .set(...as('admin'))
      .send({ url: before.url, credentials: {} })
      .expect(200);
    expect(bare.body.credentialNames).toEqual([]);
    expect(before.authorizations.at(-1)).toBeUndefined();
    expect(await move(after.url, 'admin', keyed).expect(200)).toBeTruthy();
  });

  it('is refused for an entry whose address the catalog fixes', async () => {
    const fixed = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'everything', name: 'reference' })
        .expect(201)
    ).body.id;
    const res = await move(after.url, 'admin', fixed).expect(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', errors: [expect.objectContaining({ path: 'url', code: 'not_allowed' })] });
  });
});
