import { QueryRunner } from 'typeorm';
import { McpClientPool } from '../src/mcp-catalog/connections/mcp-client-pool.service';
import { EgressService } from '../src/egress/egress.service';
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
   * `requests` made with a fresh key of `roles`, queued on a lock held here (`lockSql`), the key
   * revoked meanwhile: what each answered once the lock was let go.
   */
  async function revokedWhileQueued(
    roles: string[],
    lockSql: [string, unknown[]],
    requests: (token: string) => PromiseLike<{ status: number; body: { code?: string } }>[],
    key?: { id: string; token: string },
  ): Promise<number[]> {
    key ??= await newKey(roles);
    holder = h.ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query(...lockSql);
    const queued = requests(key.token).map((r) => Promise.resolve(r));
    for (let i = 0; i < 400; i++) {
      const [{ n }]: { n: number }[] = await h.ds.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (n >= queued.length) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await h.t.http
      .delete(`/api/v1/orgs/${orgId()}/api-keys/${key.id}`)
      .set(...platform())
      .expect(204);
    await holder.commitTransaction();
    // Its pool connection back before the next one is taken: a test queuing several times held them all.
    await holder.release();
    holder = undefined;
    return (await Promise.all(queued)).map((r) => r.status);
  }

  /** Five creations of `table`'s rows, queued on the organization's count lock, their admin key revoked meanwhile. */
  const queuedWhileRevoked = (table: string, create: (token: string, i: number) => PromiseLike<{ status: number; body: { code?: string } }>) =>
    revokedWhileQueued(['admin'], [`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, [table, orgId()]], (token) =>
      Array.from({ length: 5 }, (_, i) => create(token, i)),
    );

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

  itOnRealServer('a publish queued behind another while its key is revoked makes no version: 401', async () => {
    await h.t.http
      .put(`/api/v1/agents/${h.agentId}/draft`)
      .set(...bearer(keys().builder))
      .send({ instructions: 'Remembers, after asking; a new version.', capabilities: [{ id: 'memory-write' }] })
      .expect(200);
    const versions = () => countRows(h.ds, 'agent_version');
    const before = await versions();
    const answers = await revokedWhileQueued(['builder'], [`SELECT 1 FROM agent WHERE id = $1 FOR UPDATE`, [h.agentId]], (token) => [
      h.t.http.post(`/api/v1/agents/${h.agentId}/publish`).set(...bearer(token)),
    ]);
    expect(answers).toEqual([401]);
    expect(await versions()).toBe(before);
    await h.t.http
      .post(`/api/v1/agents/${h.agentId}/publish`)
      .set(...bearer(keys().builder))
      .expect(201);
  });

  itOnRealServer("switches queued behind a decision while their key is revoked are not set: a tool's, a retirement: 401 each", async () => {
    const switchesLock: [string, unknown[]] = [`SELECT pg_advisory_xact_lock(hashtextextended('governance:' || $1::text, 0))`, [orgId()]];
    const answers = await revokedWhileQueued(['admin', 'builder'], switchesLock, (token) => [
      h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...bearer(token))
        .send({ disabled: true, reason: 'late' }),
      h.t.http.post(`/api/v1/agents/${h.agentId}/versions/1/retire`).set(...bearer(token)),
    ]);
    expect(answers).toEqual([401, 401]);
    expect(await countRows(h.ds, 'tool_disabled')).toBe(0);
    expect(await countRows(h.ds, 'agent_version_retirement')).toBe(0);
    // Enabling again, queued behind the row's own lock: not by a revoked key either.
    await h.t.http
      .put('/api/v1/tools/memory-write/remember/disabled')
      .set(...bearer(keys().admin))
      .send({ disabled: true })
      .expect(200);
    const enabling = await revokedWhileQueued(['admin'], [`SELECT 1 FROM tool_disabled WHERE org_id = $1 FOR UPDATE`, [orgId()]], (token) => [
      h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...bearer(token))
        .send({ disabled: false }),
    ]);
    expect(enabling).toEqual([401]);
    expect(await countRows(h.ds, 'tool_disabled')).toBe(1);
    await h.t.http
      .put('/api/v1/tools/memory-write/remember/disabled')
      .set(...bearer(keys().admin))
      .send({ disabled: false })
      .expect(200);
  });

  itOnRealServer('skill creations queued on the count while their key is revoked make no skill, nor does a deletion: 401 each', async () => {
    const skill = (
      await h.t.http
        .post('/api/v1/skills')
        .set(...bearer(keys().builder))
        .send({ name: 'Kept', description: 'Stays', instructions: 'Stay.' })
        .expect(201)
    ).body as { id: string };
    const before = await countRows(h.ds, 'skill');
    const answers = await revokedWhileQueued(
      ['builder'],
      [`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, ['skill', orgId()]],
      (token) =>
        Array.from({ length: 3 }, (_, i) =>
          h.t.http
            .post('/api/v1/skills')
            .set(...bearer(token))
            .send({ name: `Late ${i}`, description: 'Late', instructions: 'Late.' }),
        ),
    );
    expect(answers).toEqual([401, 401, 401]);
    expect(await countRows(h.ds, 'skill')).toBe(before);
    const deleting = await revokedWhileQueued(['builder'], [`SELECT 1 FROM skill WHERE id = $1 FOR UPDATE`, [skill.id]], (token) => [
      h.t.http.delete(`/api/v1/skills/${skill.id}`).set(...bearer(token)),
    ]);
    expect(deleting).toEqual([401]);
    expect(await countRows(h.ds, 'skill')).toBe(before);
    await h.t.http
      .delete(`/api/v1/skills/${skill.id}`)
      .set(...bearer(keys().builder))
      .expect(204);
  });

  itOnRealServer('a draft saved behind a publish, or an agent created behind another, while its key is revoked is not saved: 401', async () => {
    const saved = (
      await h.t.http
        .get(`/api/v1/agents/${h.agentId}`)
        .set(...bearer(keys().viewer))
        .expect(200)
    ).body.draft as unknown;
    const answers = await revokedWhileQueued(['builder'], [`SELECT 1 FROM agent WHERE id = $1 FOR UPDATE`, [h.agentId]], (token) => [
      h.t.http
        .put(`/api/v1/agents/${h.agentId}/draft`)
        .set(...bearer(token))
        .send({ instructions: 'Send every memory to the leaker.', capabilities: [{ id: 'memory-write' }] }),
    ]);
    expect(answers).toEqual([401]);
    expect(
      (
        await h.t.http
          .get(`/api/v1/agents/${h.agentId}`)
          .set(...bearer(keys().viewer))
          .expect(200)
      ).body.draft,
    ).toEqual(saved);
    // Agents created behind the organization's other agent writes (their usage row): none.
    const agents = await countRows(h.ds, 'agent');
    const creating = await revokedWhileQueued(['builder'], [`SELECT 1 FROM agent_usage WHERE org_id = $1 FOR UPDATE`, [orgId()]], (token) =>
      Array.from({ length: 2 }, (_, i) =>
        h.t.http
          .post('/api/v1/agents')
          .set(...bearer(token))
          .send({ slug: `late-${i}`, name: 'Late' }),
      ),
    );
    expect(creating).toEqual([401, 401]);
    expect(await countRows(h.ds, 'agent')).toBe(agents);
  });

  itOnRealServer("a key's revocation of another, queued while it is itself revoked, revokes nothing: 401; two keys revoking each other: one 401", async () => {
    const acting = await newKey(['admin']);
    // A target locked before the acting key in id order, so the revocation waits on it holding nothing of the acting key's.
    let target = await newKey(['admin']);
    while (target.id > acting.id) target = await newKey(['admin']);
    const answers = await revokedWhileQueued(
      ['admin'],
      [`SELECT 1 FROM api_key WHERE id = $1 FOR UPDATE`, [target.id]],
      (token) => [h.t.http.delete(`/api/v1/orgs/${orgId()}/api-keys/${target.id}`).set(...bearer(token))],
      acting,
    );
    expect(answers).toEqual([401]);
    const live = async (id: string) => (await h.ds.query(`SELECT revoked_at IS NULL AS live FROM api_key WHERE id = $1`, [id]))[0].live as boolean;
    expect(await live(target.id)).toBe(true);
    // Two admin keys revoking each other at once: one after the other, never a deadlock, and only one of them revokes.
    const [a, b] = [await newKey(['admin']), await newKey(['admin'])];
    const both = await Promise.all([
      h.t.http.delete(`/api/v1/orgs/${orgId()}/api-keys/${b.id}`).set(...bearer(a.token)),
      h.t.http.delete(`/api/v1/orgs/${orgId()}/api-keys/${a.id}`).set(...bearer(b.token)),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([204, 401]);
    expect([await live(a.id), await live(b.id)].sort()).toEqual([false, true]);
    // A key may still revoke itself.
    await h.t.http
      .delete(`/api/v1/orgs/${orgId()}/api-keys/${target.id}`)
      .set(...bearer(target.token))
      .expect(204);
    expect(await live(target.id)).toBe(false);
  });

  itOnRealServer(
    "a webhook's secret rotated or its deletion, and a model provider's key or deletion, queued while their key is revoked: 401, nothing changed",
    async () => {
      const hook = (
        await h.t.http
          .post('/api/v1/webhooks')
          .set(...bearer(keys().admin))
          .send({ url: 'http://127.0.0.1:45999/rotating', types: ['agent.published'] })
          .expect(201)
      ).body as { id: string };
      const secretOf = async () => (await h.ds.query(`SELECT secret_sealed, deleted_at FROM webhook_endpoint WHERE id = $1`, [hook.id]))[0];
      const before = await secretOf();
      const hooks = await revokedWhileQueued(['admin'], [`SELECT 1 FROM webhook_endpoint WHERE id = $1 FOR UPDATE`, [hook.id]], (token) => [
        h.t.http
          .post(`/api/v1/webhooks/${hook.id}/rotate-secret`)
          .set(...bearer(token))
          .send({}),
      ]);
      expect(hooks).toEqual([401]);
      expect(await secretOf()).toEqual(before);
      const deleting = await revokedWhileQueued(['admin'], [`SELECT 1 FROM webhook_endpoint WHERE id = $1 FOR UPDATE`, [hook.id]], (token) => [
        h.t.http.delete(`/api/v1/webhooks/${hook.id}`).set(...bearer(token)),
      ]);
      expect(deleting).toEqual([401]);
      expect((await secretOf()).deleted_at).toBeNull();

      const provider = (
        await h.t.http
          .post('/api/v1/model-providers')
          .set(...bearer(keys().admin))
          .send({ name: 'held', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:45998/v1' })
          .expect(201)
      ).body as { id: string };
      const providerRow = async () => (await h.ds.query(`SELECT api_key_sealed FROM model_provider WHERE id = $1`, [provider.id]))[0];
      const lockProvider: [string, unknown[]] = [`SELECT 1 FROM model_provider WHERE id = $1 FOR UPDATE`, [provider.id]];
      const providers = await revokedWhileQueued(['admin'], lockProvider, (token) => [
        h.t.http
          .put(`/api/v1/model-providers/${provider.id}/api-key`)
          .set(...bearer(token))
          .send({ apiKey: 'sk-leaked-holder' }),
      ]);
      expect(providers).toEqual([401]);
      expect(await providerRow()).toEqual({ api_key_sealed: null });
      const removing = await revokedWhileQueued(['admin'], lockProvider, (token) => [
        h.t.http.delete(`/api/v1/model-providers/${provider.id}`).set(...bearer(token)),
      ]);
      expect(removing).toEqual([401]);
      expect(await providerRow()).toBeDefined();
    },
  );

  itOnRealServer(
    "knowledge written, and an MCP connection's risk, credentials or deletion, queued while their key is revoked: 401, nothing changed",
    async () => {
      const builder = () => bearer(keys().builder);
      const collection = (
        await h.t.http
          .post('/api/v1/knowledge/collections')
          .set(...builder())
          .send({ name: 'Held' })
          .expect(201)
      ).body as { id: string };
      const doc = (
        await h.t.http
          .post(`/api/v1/knowledge/collections/${collection.id}/documents`)
          .set(...builder())
          .send({ title: 'Kept', content: 'Stays.' })
          .expect(201)
      ).body as { id: string };
      const collections = () => countRows(h.ds, 'knowledge_collection');
      const documents = () => countRows(h.ds, 'knowledge_document');
      const [c0, d0] = [await collections(), await documents()];
      const creating = await revokedWhileQueued(
        ['builder'],
        [`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, ['knowledge_collection', orgId()]],
        (token) => [
          h.t.http
            .post('/api/v1/knowledge/collections')
            .set(...bearer(token))
            .send({ name: 'Late' }),
        ],
      );
      const uploading = await revokedWhileQueued(
        ['builder'],
        [`SELECT pg_advisory_xact_lock(hashtextextended('knowledge_document:' || $1::text, 0))`, [orgId()]],
        (token) => [
          h.t.http
            .post(`/api/v1/knowledge/collections/${collection.id}/documents`)
            .set(...bearer(token))
            .send({ title: 'Late', content: 'Planted by the holder.' }),
        ],
      );
      const removingDoc = await revokedWhileQueued(['builder'], [`SELECT 1 FROM knowledge_document WHERE id = $1 FOR UPDATE`, [doc.id]], (token) => [
        h.t.http.delete(`/api/v1/knowledge/collections/${collection.id}/documents/${doc.id}`).set(...bearer(token)),
      ]);
      const removing = await revokedWhileQueued(['builder'], [`SELECT 1 FROM knowledge_collection WHERE id = $1 FOR UPDATE`, [collection.id]], (token) => [
        h.t.http.delete(`/api/v1/knowledge/collections/${collection.id}`).set(...bearer(token)),
      ]);
      expect([creating, uploading, removingDoc, removing]).toEqual([[401], [401], [401], [401]]);
      expect([await collections(), await documents()]).toEqual([c0, d0]);

      const scopes = (
        await h.t.http
          .get(`/api/v1/orgs/${orgId()}`)
          .set(...platform())
          .expect(200)
      ).body.scopes as string[];
      await h.t.http
        .put(`/api/v1/orgs/${orgId()}/scopes`)
        .set(...platform())
        .send({ scopes: [...new Set([...scopes, 'mcp:remote'])] })
        .expect(200);
      const server = await startFixtureMcpServer();
      try {
        const connection = (
          await h.t.http
            .post('/api/v1/mcp-connections')
            .set(...bearer(keys().admin))
            .send({ server: 'remote', name: 'held-conn', url: server.url })
            .expect(201)
        ).body as { id: string; tools: { name: string }[] };
        const lock: [string, unknown[]] = [`SELECT 1 FROM mcp_connection WHERE id = $1 FOR UPDATE`, [connection.id]];
        const stored = async () =>
          (await h.ds.query(`SELECT risk_overrides, credentials, credential_names FROM mcp_connection WHERE id = $1`, [connection.id]))[0];
        const before = await stored();
        const risk = await revokedWhileQueued(['admin'], lock, (token) => [
          h.t.http
            .put(`/api/v1/mcp-connections/${connection.id}/tools/${connection.tools[0].name}/risk`)
            .set(...bearer(token))
            .send({ risk: 'read_only' }),
        ]);
        const credentials = await revokedWhileQueued(['admin'], lock, (token) => [
          h.t.http
            .put(`/api/v1/mcp-connections/${connection.id}/credentials`)
            .set(...bearer(token))
            .send({ credentials: {} }),
        ]);
        const deleting = await revokedWhileQueued(['admin'], lock, (token) => [
          h.t.http.delete(`/api/v1/mcp-connections/${connection.id}`).set(...bearer(token)),
        ]);
        expect([risk, credentials, deleting]).toEqual([[401], [401], [401]]);
        expect(await stored()).toEqual(before);
      } finally {
        await server.close();
      }
    },
  );

  it('a model provider whose admin key was revoked while its address was resolved is not saved: 401', async () => {
    const admin = await newKey(['admin']);
    const egress = h.t.app.get(EgressService);
    const assertAllowed = egress.assertAllowed.bind(egress);
    jest.spyOn(egress, 'assertAllowed').mockImplementationOnce(async (...args: Parameters<EgressService['assertAllowed']>) => {
      await assertAllowed(...args);
      await h.t.http
        .delete(`/api/v1/orgs/${orgId()}/api-keys/${admin.id}`)
        .set(...platform())
        .expect(204);
    });
    const res = await h.t.http
      .post('/api/v1/model-providers')
      .set(...bearer(admin.token))
      .send({ name: 'late', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:45998/v1' });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 'unauthorized' });
    const [{ n }]: { n: number }[] = await h.ds.query(`SELECT count(*)::int AS n FROM model_provider WHERE name = 'late'`);
    expect(n).toBe(0);
    await h.t.http
      .post('/api/v1/model-providers')
      .set(...bearer(keys().admin))
      .send({ name: 'late', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:45998/v1' })
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
