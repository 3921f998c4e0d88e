import { DataSource } from 'typeorm';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Revoking a key ends its unfinished runs in the revocation's transaction (their approvals
 * rejected, each audited), and the key is accepted until that commits. One event a run went in one
 * audit statement, 8 parameters each: a key with 8,300 runs waiting (7 minutes of its own rate
 * limit) could not be revoked at all (`503`, every time, the key still accepted), and the work was
 * a round trip or more a run before it (1,500 runs: 11 s, attack round 9, C-F1).
 */
describe('revoking a key with many unfinished runs (e2e)', () => {
  let t: TestApp;
  let db: DataSource;
  let model: ScriptedModel;
  let org: TestOrg;
  let agentId: string;

  beforeAll(async () => {
    // Every run asks for a call that needs approval, and waits.
    model = await startScriptedModel(() => ({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig({ modelRetries: 0 }) } });
    await t.app.listen(0, '127.0.0.1');
    db = t.app.get(DataSource);
    org = await createOrg(t, []);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'many', name: 'Many' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: provider.body.id, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  it('fails 8,300 runs and rejects their approvals in one revocation; the key is refused after it', async () => {
    const key = await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'runner', roles: ['agent'] })
      .expect(201);
    const waiting: { id: string; approvalId: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await t.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...bearer(key.body.token))
        .set('Prefer', 'wait=10')
        .send({ input: `Tell Ann ${i}` })
        .expect(201);
      expect(run.body.status).toBe('waiting_for_approval');
      waiting.push({ id: run.body.id, approvalId: run.body.pendingApprovalIds[0] });
    }
    // What the key's rate limit makes in about 7 minutes, written here rather than stepped.
    await db.query(
      `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, not_before)
       SELECT gen_random_uuid(), org_id, agent_id, version, status, input, messages, requested_by, not_before
         FROM run, generate_series(1, 2766) WHERE id = ANY ($1::uuid[])`,
      [waiting.map((w) => w.id)],
    );

    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${key.body.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);

    await t.http
      .get('/api/v1/me')
      .set(...bearer(key.body.token))
      .expect(401);
    const runs: { status: string; n: string }[] = await db.query(`SELECT status, count(*)::text AS n FROM run WHERE requested_by = $1 GROUP BY status`, [
      key.body.id,
    ]);
    expect(runs).toEqual([{ status: 'failed', n: '8301' }]);
    const [events] = await db.query(
      `SELECT count(*)::int AS n FROM run_event e JOIN run r ON r.id = e.run_id WHERE r.requested_by = $1 AND e.type = 'run.failed'`,
      [key.body.id],
    );
    expect(events.n).toBe(8301);
    const [audited] = await db.query(`SELECT count(*)::int AS n FROM audit_event WHERE org_id = $1 AND type = 'run.failed'`, [org.id]);
    expect(audited.n).toBe(8301);
    for (const w of waiting) {
      const approval = await t.http
        .get(`/api/v1/approvals/${w.approvalId}`)
        .set(...bearer(org.keys.approver))
        .expect(200);
      expect(approval.body).toMatchObject({
        status: 'rejected',
        note: `The API key that started the run ${w.id} was revoked; the run failed and the call was not run.`,
      });
      expect(approval.body.decidedBy).toBeUndefined();
      const call = await t.http
        .get(`/api/v1/tool-calls/${approval.body.toolCallId}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(call.body).toMatchObject({ status: 'rejected', error: { code: 'approval_rejected', message: approval.body.note } });
      const late = await t.http
        .post(`/api/v1/approvals/${w.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(409);
      expect(late.body.code).toBe('approval_already_decided');
    }
    const rejections: { data: { runId: string; cause: string; apiKeyId: string } }[] = await db.query(
      `SELECT data FROM audit_event WHERE org_id = $1 AND type = 'approval.rejected'`,
      [org.id],
    );
    expect(rejections.map((r) => r.data.runId).sort()).toEqual(waiting.map((w) => w.id).sort());
    expect(rejections.every((r) => r.data.cause === 'api_key_revoked' && r.data.apiKeyId === key.body.id)).toBe(true);
  }, 120_000);
});
