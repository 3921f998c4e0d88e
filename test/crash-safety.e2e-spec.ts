import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { createTestDatabase, TestDatabase } from './support/test-database';

/**
 * The server is killed with SIGKILL in the middle of its work and started again on the same
 * database: nothing pending is lost, nothing approved runs twice, and the call the crash cut short
 * reads failed / interrupted. Runs on the embedded database (DATA_DIR) and, when DATABASE_URL is
 * set, on a fresh database of the real server.
 */
const ENTRY = 'test/support/fixture-server.ts';

describe('crash safety', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-crash-'));
  const effects = join(dir, 'effects.log');
  const adminToken = 'cpa_crash_' + 'x'.repeat(24);
  let db: TestDatabase | undefined;
  let server: ServerProcess | undefined;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    writeFileSync(effects, '');
    if (process.env.DATABASE_URL) db = await createTestDatabase();
    env = {
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: db?.url,
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      FX_CRASH_LOG: effects,
      // A call still running 1 s past its 2 s timeout belongs to a dead process.
      TOOL_TIMEOUT_MS: '2000',
      TOOL_LEASE_GRACE_SECONDS: '1',
      SWEEP_INTERVAL_SECONDS: '1',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
    };
  });
  afterAll(async () => {
    if (server) await stopServerProcess(server, 'SIGKILL');
    await db?.drop();
  });

  const lines = () => readFileSync(effects, 'utf8').split('\n').filter(Boolean);

  it('loses nothing pending, runs nothing twice, and marks the cut-short call interrupted', async () => {
    server = await startServerProcess(env, ENTRY);
    const api = () => request(server!.url);
    const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];

    const org = (
      await api()
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'crash', name: 'Crash' })
        .expect(201)
    ).body;
    const key = async (role: string) =>
      (
        await api()
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body.token as string;
    const builder = await key('builder');
    const agentKey = await key('agent');
    const approver = await key('approver');
    const agent = (
      await api()
        .post('/api/v1/agents')
        .set(...as(builder))
        .send({ slug: 'crashy', name: 'Crashy' })
        .expect(201)
    ).body;
    await api()
      .put(`/api/v1/agents/${agent.id}/draft`)
      .set(...as(builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-crash' }] })
      .expect(200);
    await api()
      .post(`/api/v1/agents/${agent.id}/publish`)
      .set(...as(builder))
      .expect(201);

    const ask = async (tag: string, ms: number) =>
      (
        await api()
          .post(`/api/v1/agents/${agent.id}/tool-calls`)
          .set(...as(agentKey))
          .send({ tool: 'fx_crash_effect', arguments: { tag, ms } })
          .expect(202)
      ).body;
    const done = await ask('done-before', 0);
    const pendingA = await ask('pending-a', 0);
    const pendingB = await ask('pending-b', 0);
    const cut = await ask('cut-short', 600000);

    await api()
      .post(`/api/v1/approvals/${done.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .expect(200);
    // The long one: approved, running, and then the process dies under it.
    const hanging = api()
      .post(`/api/v1/approvals/${cut.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .then(
        (r) => r.status,
        () => 'connection lost',
      );
    while (!lines().includes('start cut-short')) await new Promise((r) => setTimeout(r, 20));
    await stopServerProcess(server, 'SIGKILL');
    expect(await hanging).toBe('connection lost');

    server = await startServerProcess(env, ENTRY);
    // Nothing pending is lost.
    const pending = (
      await api()
        .get('/api/v1/approvals?status=pending')
        .set(...as(approver))
        .expect(200)
    ).body.items.map((a: { id: string }) => a.id);
    expect(pending.sort()).toEqual([pendingA.approvalId, pendingB.approvalId].sort());
    // What was decided stays decided: the finished call is not run again.
    const again = await api()
      .post(`/api/v1/approvals/${done.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .expect(409);
    expect(again.body.code).toBe('approval_already_decided');
    expect(
      (
        await api()
          .get(`/api/v1/tool-calls/${done.id}`)
          .set(...as(agentKey))
          .expect(200)
      ).body.status,
    ).toBe('succeeded');

    // The call the crash cut short becomes failed / interrupted once its lease runs out, and is never re-run.
    let call: { status: string; error?: { code: string } } = { status: 'running' };
    for (let i = 0; i < 100 && call.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      call = (
        await api()
          .get(`/api/v1/tool-calls/${cut.id}`)
          .set(...as(agentKey))
          .expect(200)
      ).body;
    }
    expect(call).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    const retry = await api()
      .post(`/api/v1/approvals/${cut.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .expect(409);
    expect(retry.body.code).toBe('approval_already_decided');

    // A pending approval from before the crash still works, once.
    await api()
      .post(`/api/v1/approvals/${pendingA.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .expect(200);

    expect(lines().sort()).toEqual(['done done-before', 'done pending-a', 'start cut-short', 'start done-before', 'start pending-a'].sort());
  });

  it('lets a running call finish when SIGTERM arrives, answering it and no 5xx', async () => {
    const api = () => request(server!.url);
    const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
    const org = (
      await api()
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'graceful', name: 'Graceful' })
        .expect(201)
    ).body;
    const key = async (role: string) =>
      (
        await api()
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body.token as string;
    const [builder, agentKey, approver] = [await key('builder'), await key('agent'), await key('approver')];
    const agent = (
      await api()
        .post('/api/v1/agents')
        .set(...as(builder))
        .send({ slug: 'graceful', name: 'G' })
        .expect(201)
    ).body;
    await api()
      .put(`/api/v1/agents/${agent.id}/draft`)
      .set(...as(builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-crash' }] })
      .expect(200);
    await api()
      .post(`/api/v1/agents/${agent.id}/publish`)
      .set(...as(builder))
      .expect(201);
    const call = (
      await api()
        .post(`/api/v1/agents/${agent.id}/tool-calls`)
        .set(...as(agentKey))
        .send({ tool: 'fx_crash_effect', arguments: { tag: 'graceful', ms: 1000 } })
        .expect(202)
    ).body;

    const approving = api()
      .post(`/api/v1/approvals/${call.approvalId}/approve`)
      .set(...as(approver))
      .send({})
      .then((r) => r);
    while (!lines().includes('start graceful')) await new Promise((r) => setTimeout(r, 20));
    const exited = stopServerProcess(server!, 'SIGTERM');
    const answer = await approving;
    expect(answer.status).toBe(200);
    expect(answer.body.toolCall.status).toBe('succeeded');
    expect(await exited).toBe(0);
    expect(lines()).toContain('done graceful');
  });
});
