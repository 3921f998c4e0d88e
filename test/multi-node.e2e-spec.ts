import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { createTestDatabase, TestDatabase } from './support/test-database';

/**
 * Two API nodes (two server processes) on one PostgreSQL server, requests spread across both.
 * Decisions are the database's: one approval runs once, one Idempotency-Key makes one call, a
 * revoked key is refused by the other node at once.
 *
 * Only on a real server (DATABASE_URL): the embedded database is one node by design. PGlite is a
 * single session, and its socket server interleaves the protocol messages of concurrent
 * connections outside a transaction, so it must only ever have one active client.
 */
const ENTRY = 'test/support/fixture-server.ts';
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('multi-node suite: not run on the embedded database (one node by design); it runs when DATABASE_URL is set');

(onRealServer ? describe : describe.skip)('several API nodes on one database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-nodes-'));
  const effects = join(dir, 'effects.log');
  const adminToken = 'cpa_nodes_' + 'y'.repeat(24);
  let db: TestDatabase;
  let nodes: ServerProcess[] = [];

  beforeAll(async () => {
    writeFileSync(effects, '');
    db = await createTestDatabase();
    const env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '5',
      PLATFORM_ADMIN_TOKEN: adminToken,
      // Every node opens what another sealed: one key for all.
      SECRETS_KEY: randomBytes(32).toString('base64'),
      FX_CRASH_LOG: effects,
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
    };
    nodes = await Promise.all([startServerProcess(env, ENTRY), startServerProcess(env, ENTRY)]);
  });
  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopServerProcess(n)));
    await db.drop();
  });

  const node = (i: number) => request(nodes[i % nodes.length].url);
  const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
  const runs = (tag: string) =>
    readFileSync(effects, 'utf8')
      .split('\n')
      .filter((l) => l === `start ${tag}`).length;

  let org: { id: string };
  let keys: Record<string, { token: string; id: string }>;
  let agentId: string;

  beforeAll(async () => {
    org = (
      await node(0)
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'nodes', name: 'Nodes' })
        .expect(201)
    ).body;
    keys = {};
    for (const role of ['builder', 'agent', 'approver', 'admin']) {
      const k = (
        await node(1)
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body;
      keys[role] = { token: k.token, id: k.id };
    }
    agentId = (
      await node(0)
        .post('/api/v1/agents')
        .set(...as(keys.builder.token))
        .send({ slug: 'two-nodes', name: 'Two nodes' })
        .expect(201)
    ).body.id;
    await node(1)
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as(keys.builder.token))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-crash' }] })
      .expect(200);
    await node(0)
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as(keys.builder.token))
      .expect(201);
  });

  it('runs an approved call once when approvals race across nodes', async () => {
    const tag = `race-${randomUUID().slice(0, 8)}`;
    const call = (
      await node(0)
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as(keys.agent.token))
        .send({ tool: 'fx_crash_effect', arguments: { tag, ms: 0 } })
        .expect(202)
    ).body;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        node(i)
          .post(`/api/v1/approvals/${call.approvalId}/approve`)
          .set(...as(keys.approver.token))
          .send({})
          .then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s === 200)).toHaveLength(1);
    expect(answers.filter((s) => s !== 200).every((s) => s === 409)).toBe(true);
    expect(runs(tag)).toBe(1);
  });

  it('makes one call for one Idempotency-Key sent to both nodes at once', async () => {
    const tag = `idem-${randomUUID().slice(0, 8)}`;
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        node(i)
          .post(`/api/v1/agents/${agentId}/tool-calls`)
          .set(...as(keys.agent.token))
          .set('Idempotency-Key', key)
          .send({ tool: 'fx_crash_effect', arguments: { tag, ms: 0 } }),
      ),
    );
    const ids = new Set(answers.filter((r) => r.status === 202).map((r) => r.body.id));
    expect(ids.size).toBe(1);
    expect(answers.every((r) => r.status === 202 || (r.status === 409 && r.body.code === 'idempotency_in_progress'))).toBe(true);
    const calls = (
      await node(0)
        .get(`/api/v1/tool-calls?agentId=${agentId}&limit=200`)
        .set(...as(keys.agent.token))
        .expect(200)
    ).body.items;
    expect(calls.filter((c: { arguments: { tag: string } }) => c.arguments.tag === tag)).toHaveLength(1);
  });

  it('refuses a key on one node the moment it is revoked on the other', async () => {
    const doomed = (
      await node(0)
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as(keys.admin.token))
        .send({ name: 'doomed', roles: ['viewer'] })
        .expect(201)
    ).body;
    await node(1)
      .get('/api/v1/me')
      .set(...as(doomed.token))
      .expect(200);
    await node(0)
      .delete(`/api/v1/orgs/${org.id}/api-keys/${doomed.id}`)
      .set(...as(keys.admin.token))
      .expect(204);
    await node(1)
      .get('/api/v1/me')
      .set(...as(doomed.token))
      .expect(401);
  });
});
