import { QueryRunner } from 'typeorm';
import { McpClientPool } from '../src/mcp-catalog/connections/mcp-client-pool.service';
import { ToolImplementations } from '../src/runtime/tool-implementations';
import { startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg } from './support/test-app';
import { countRows, hardeningWorld, HardeningWorld } from './support/hardening';

/**
 * Attack round 13, M-F1 and M-F2: a request is authorized with the key and the organization's
 * scopes as they were when it arrived, and an approval or a new key was written with that
 * authority however long the request took to get there. An approval clicked while the platform
 * admin removed the scope its tool needs, or by an approver key being revoked, ran the tool after
 * the removal or the revocation had committed; key creations of an admin key queued behind one
 * another (they count under one lock per organization) each made a new key after that key's
 * revocation had committed. The decision, and the creation, now lock the organization's scopes and
 * their own key, and see the removal or the revocation that committed first.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
const itOnRealServer = onRealServer ? it : it.skip;

jest.setTimeout(120_000);

describe('authority changed while a request was under way (e2e, attack round 13 M-F1, M-F2)', () => {
  let h: HardeningWorld;
  let holder: QueryRunner | undefined;
  const keys = () => h.world.org.keys;
  const orgId = () => h.world.org.id;
  const platform = () => bearer(h.t.adminToken);

  beforeAll(async () => {
    h = await hardeningWorld({ config: { sweepIntervalMs: 3_600_000 } });
    await h.t.http
      .put(`/api/v1/agents/${h.agentId}/draft`)
      .set(...bearer(keys().builder))
      .send({ instructions: 'Remembers, after asking.', capabilities: [{ id: 'memory-write' }] })
      .expect(200);
    await h.t.http
      .post(`/api/v1/agents/${h.agentId}/publish`)
      .set(...bearer(keys().builder))
      .expect(201);
  }, 120_000);
  afterEach(async () => {
    jest.restoreAllMocks();
    if (holder?.isTransactionActive) await holder.rollbackTransaction();
    await holder?.release();
    holder = undefined;
  });
  afterAll(() => h.t.close());

  async function pendingRemember(content: string): Promise<string> {
    const res = await h.t.http
      .post(`/api/v1/agents/${h.agentId}/tool-calls`)
      .set(...bearer(keys().agent))
      .send({ tool: 'remember', arguments: { content } })
      .expect(202);
    return res.body.approvalId;
  }

  const approvalStatus = async (id: string) =>
    (
      await h.t.http
        .get(`/api/v1/approvals/${id}`)
        .set(...bearer(keys().viewer))
        .expect(200)
    ).body.status;

  /** Runs `meanwhile` once, after the approval's guards built the version and before it decides. */
  function whileDeciding(meanwhile: () => Promise<unknown>): void {
    const implementations = h.t.app.get(ToolImplementations);
    const build = implementations.build.bind(implementations);
    jest.spyOn(implementations, 'build').mockImplementationOnce(async (...args: Parameters<ToolImplementations['build']>) => {
      const built = await build(...args);
      await meanwhile();
      return built;
    });
  }

  async function newKey(roles: string[], token = h.t.adminToken): Promise<{ id: string; token: string }> {
    const res = await h.t.http
      .post(`/api/v1/orgs/${orgId()}/api-keys`)
      .set(...bearer(token))
      .send({ name: `${roles.join('-')}-${Math.random().toString(36).slice(2, 8)}`, roles })
      .expect(201);
    return { id: res.body.id, token: res.body.token };
  }

  it('an approval decided after the platform removed the scope its tool needs is refused 403 scope_not_granted, still pending, nothing run', async () => {
    const approvalId = await pendingRemember('Keeps bees');
    const memories = await countRows(h.ds, 'agent_memory');
    whileDeciding(() =>
      h.t.http
        .put(`/api/v1/orgs/${orgId()}/scopes`)
        .set(...platform())
        .send({ scopes: ['knowledge:read', 'memory:read'] })
        .expect(200),
    );
    try {
      const res = await h.t.http
        .post(`/api/v1/approvals/${approvalId}/approve`)
        .set(...bearer(keys().approver))
        .send({});
      expect({ status: res.status, code: res.body.code, missing: res.body.missingScopes }).toEqual({
        status: 403,
        code: 'scope_not_granted',
        missing: ['memory:write'],
      });
      expect(await approvalStatus(approvalId)).toBe('pending');
      expect(await countRows(h.ds, 'agent_memory')).toBe(memories);
      const [call]: { status: string }[] = await h.ds.query(`SELECT status FROM tool_call WHERE approval_id = $1`, [approvalId]);
      expect(call.status).toBe('pending_approval');
    } finally {
      await h.t.http
        .put(`/api/v1/orgs/${orgId()}/scopes`)
        .set(...platform())
        .send({ scopes: ['knowledge:read', 'memory:read', 'memory:write'] })
        .expect(200);
    }
    // With the scope granted again, another approver decides it: it runs, once.
    const res = await h.t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...bearer(keys().approver))
      .send({});
    expect(res.status).toBe(200);
    expect(await countRows(h.ds, 'agent_memory')).toBe(memories + 1);
  });

  it('an approval by a key revoked while it decided is refused 401, still pending, nothing run; another approver may decide it', async () => {
    const approvalId = await pendingRemember('Collects stamps');
    const memories = await countRows(h.ds, 'agent_memory');
    const approver = await newKey(['approver']);
    whileDeciding(() =>
      h.t.http
        .delete(`/api/v1/orgs/${orgId()}/api-keys/${approver.id}`)
        .set(...platform())
        .expect(204),
    );
    const res = await h.t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...bearer(approver.token))
      .send({});
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 'unauthorized' });
    expect(await approvalStatus(approvalId)).toBe('pending');
    expect(await countRows(h.ds, 'agent_memory')).toBe(memories);
    const decided = await h.t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...bearer(keys().approver))
      .send({});
    expect(decided.status).toBe(200);
    expect(decided.body.approval.decidedBy).toBe(h.world.org.keyIds.approver);
  });

  it('a rejection is not held to the scopes: it runs nothing', async () => {
    const approvalId = await pendingRemember('Rides a bike');
    await h.t.http
      .put(`/api/v1/orgs/${orgId()}/scopes`)
      .set(...platform())
      .send({ scopes: ['knowledge:read', 'memory:read'] })
      .expect(200);
    try {
      const res = await h.t.http
        .post(`/api/v1/approvals/${approvalId}/reject`)
        .set(...bearer(keys().approver))
        .send({ reason: 'not now' })
        .expect(200);
      expect(res.body.toolCall.status).toBe('rejected');
    } finally {
      await h.t.http
        .put(`/api/v1/orgs/${orgId()}/scopes`)
        .set(...platform())
        .send({ scopes: ['knowledge:read', 'memory:read', 'memory:write'] })
        .expect(200);
    }
  });

  /**
   * Five creations of `table`'s rows with a fresh admin key, queued on the organization's count lock
   * (held here), the key revoked meanwhile: what each answered.
   */
  async function queuedWhileRevoked(table: string, create: (token: string, i: number) => PromiseLike<{ status: number }>): Promise<number[]> {
    const admin = await newKey(['admin']);
    holder = h.ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, [table, orgId()]);
    const creations = Array.from({ length: 5 }, (_, i) => Promise.resolve(create(admin.token, i)));
    for (let i = 0; i < 400; i++) {
      const [{ n }]: { n: number }[] = await h.ds.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (n >= 5) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await h.t.http
      .delete(`/api/v1/orgs/${orgId()}/api-keys/${admin.id}`)
      .set(...platform())
      .expect(204);
    await holder.commitTransaction();
    return (await Promise.all(creations)).map((r) => r.status);
  }

  itOnRealServer('key creations queued behind one another while their admin key is revoked make no key: 401 each', async () => {
    const before = await countRows(h.ds, 'api_key');
    const answers = await queuedWhileRevoked('api_key', (token, i) =>
      h.t.http
        .post(`/api/v1/orgs/${orgId()}/api-keys`)
        .set(...bearer(token))
        .send({ name: `minted-${i}`, roles: ['admin'] }),
    );
    expect(answers).toEqual([401, 401, 401, 401, 401]);
    // The revoked key itself is the one row more.
    expect(await countRows(h.ds, 'api_key')).toBe(before + 1);
    // A key not revoked still creates one.
    await newKey(['viewer'], keys().admin);
  });

  itOnRealServer('webhook creations queued while their admin key is revoked make no webhook: 401 each', async () => {
    const before = await countRows(h.ds, 'webhook_endpoint');
    const answers = await queuedWhileRevoked('webhook_endpoint', (token, i) =>
      h.t.http
        .post('/api/v1/webhooks')
        .set(...bearer(token))
        .send({ url: `http://127.0.0.1:45999/hook-${i}`, types: ['*'] }),
    );
    expect(answers).toEqual([401, 401, 401, 401, 401]);
    expect(await countRows(h.ds, 'webhook_endpoint')).toBe(before);
    await h.t.http
      .post('/api/v1/webhooks')
      .set(...bearer(keys().admin))
      .send({ url: 'http://127.0.0.1:45999/hook', types: ['*'] })
      .expect(201);
  });

  it('an MCP connection whose admin key was revoked while its server listed the tools is not stored, nor moved: 401', async () => {
    const server = await startFixtureMcpServer();
    try {
      const org = await createOrg(h.t, ['mcp:remote']);
      const admin = (
        await h.t.http
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...platform())
          .send({ name: 'lister', roles: ['admin'] })
          .expect(201)
      ).body as { id: string; token: string };
      const pool = h.t.app.get(McpClientPool);
      const listTools = pool.listTools.bind(pool);
      /** The next listing of a server's tools revokes `keyId` once it has listed them, before the change is written. */
      const revokeWhileListing = (keyId: string) =>
        jest.spyOn(pool, 'listTools').mockImplementationOnce(async (...args: Parameters<McpClientPool['listTools']>) => {
          const tools = await listTools(...args);
          await h.t.http
            .delete(`/api/v1/orgs/${org.id}/api-keys/${keyId}`)
            .set(...platform())
            .expect(204);
          return tools;
        });
      revokeWhileListing(admin.id);
      const res = await h.t.http
        .post('/api/v1/mcp-connections')
        .set(...bearer(admin.token))
        .send({ server: 'remote', name: 'late', url: server.url });
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 'unauthorized' });
      const [{ n }]: { n: number }[] = await h.ds.query(`SELECT count(*)::int AS n FROM mcp_connection WHERE org_id = $1`, [org.id]);
      expect(n).toBe(0);
      const connection = (
        await h.t.http
          .post('/api/v1/mcp-connections')
          .set(...bearer(org.keys.admin))
          .send({ server: 'remote', name: 'late', url: server.url })
          .expect(201)
      ).body as { id: string; url: string };

      // Moved to another address by a key revoked while that address was listed: not moved.
      const mover = (
        await h.t.http
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...platform())
          .send({ name: 'mover', roles: ['admin'] })
          .expect(201)
      ).body as { id: string; token: string };
      revokeWhileListing(mover.id);
      const moved = await h.t.http
        .put(`/api/v1/mcp-connections/${connection.id}/url`)
        .set(...bearer(mover.token))
        .send({ url: `${server.url}?moved=1` });
      expect({ status: moved.status, code: moved.body.code }).toEqual({ status: 401, code: 'unauthorized' });
      const [row]: { url: string }[] = await h.ds.query(`SELECT url FROM mcp_connection WHERE id = $1`, [connection.id]);
      expect(row.url).toBe(connection.url);
    } finally {
      await server.close();
    }
  });
});
