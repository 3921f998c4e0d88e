import { DataSource } from 'typeorm';
import { holdLookup, RunFixturesModule, runExecutions } from './fixtures/run-fixtures.module';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * A run acts for the key that started it: once that key expires, the run takes no further step
 * and its call waiting for approval is never run, as when the key is revoked (attack round 17,
 * V-F1 and V-F2). The key's expiry is moved into the past in the database, as the clock would.
 */
describe('runs of a key that expires (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let agentId: string;
  let keys = 0;

  beforeAll(async () => {
    model = await startScriptedModel(() => ({ text: 'unused' }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig() } });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t, []);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    agentId = await publishAgent(t, org, 'expiring', {
      instructions: 'x',
      capabilities: [{ id: 'fx-run-tools' }],
      model: { provider: provider.body.id, name: 'scripted-1' },
    });
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const db = () => t.app.get(DataSource);
  const expireNow = (keyId: string) => db().query(`UPDATE api_key SET expires_at = now() - interval '1 second' WHERE id = $1`, [keyId]);
  const newKey = async (): Promise<{ id: string; token: string }> =>
    (
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name: `runner ${++keys}`, roles: ['agent'], expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
        .expect(201)
    ).body;
  const runOf = async (id: string) =>
    (
      await t.http
        .get(`/api/v1/runs/${id}`)
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body as { status: string; error?: { code: string }; usage: { modelCalls: number } };
  async function eventually(check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('takes no further step once its key expired: no model call, no tool call after, failed unauthorized', async () => {
    const key = await newKey();
    const release = holdLookup('held-at-expiry');
    // Every answer asks for a lookup: the first is held while the key expires, the ones after must never come.
    let asked = 0;
    model.setScript(() => ({
      toolCalls: [{ id: `l${asked}`, name: 'lookup_order', arguments: JSON.stringify({ query: asked++ === 0 ? 'held-at-expiry' : `after-${asked}` }) }],
    }));
    const requestsBefore = model.requests.length;
    const run = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(key.token))
      .send({ input: 'look it up' })
      .expect(201);
    await eventually(() => runExecutions.some((e) => e.runId === run.body.id && e.args.query === 'held-at-expiry'));
    await expireNow(key.id);
    release();

    await eventually(async () => (await runOf(run.body.id)).status === 'failed');
    const ended = await runOf(run.body.id);
    expect(ended.error?.code).toBe('unauthorized');
    expect(model.requests.length - requestsBefore).toBe(1);
    expect(runExecutions.filter((e) => e.runId === run.body.id).map((e) => e.args.query)).toEqual(['held-at-expiry']);
  }, 60_000);

  it('never runs the call its run waits to have approved once the key expired; the run fails unauthorized', async () => {
    const key = await newKey();
    model.setScript(() => ({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com","body":"after expiry"}' }] }));
    const run = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(key.token))
      .set('Prefer', 'wait=10')
      .send({ input: 'tell Ann' })
      .expect(201);
    expect(run.body.status).toBe('waiting_for_approval');
    const approvalId: string = run.body.pendingApprovalIds[0];
    await expireNow(key.id);

    const late = await t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(409);
    expect(late.body.code).toBe('approval_already_decided');
    expect(runExecutions.filter((e) => e.runId === run.body.id)).toEqual([]);
    const approval = await t.http
      .get(`/api/v1/approvals/${approvalId}`)
      .set(...bearer(org.keys.approver))
      .expect(200);
    expect(approval.body).toMatchObject({
      status: 'rejected',
      note: `The API key that started the run ${run.body.id} expired; the run failed and the call was not run.`,
    });
    await eventually(async () => (await runOf(run.body.id)).status === 'failed');
    expect((await runOf(run.body.id)).error?.code).toBe('unauthorized');
  }, 60_000);

  it('runs no tool that needs a scope the platform removed while the run went on: the step after the removal is refused (V-F5)', async () => {
    const scoped = await createOrg(t, ['memory:read']);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(scoped.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const id = await publishAgent(t, scoped, 'recalls', {
      instructions: 'x',
      capabilities: [{ id: 'fx-run-tools' }, { id: 'memory' }],
      model: { provider: provider.body.id, name: 'scripted-1' },
    });
    const release = holdLookup('held-at-removal');
    let asked = 0;
    model.setScript(() => {
      const i = asked++;
      if (i === 0) return { toolCalls: [{ id: 'l', name: 'lookup_order', arguments: '{"query":"held-at-removal"}' }] };
      if (i === 1) return { toolCalls: [{ id: 'r', name: 'recall_memories', arguments: '{"query":"anything"}' }] };
      return { text: 'done' };
    });
    const run = await t.http
      .post(`/api/v1/agents/${id}/runs`)
      .set(...bearer(scoped.keys.agent))
      .send({ input: 'recall' })
      .expect(201);
    await eventually(() => runExecutions.some((e) => e.runId === run.body.id && e.args.query === 'held-at-removal'));
    await t.http
      .put(`/api/v1/orgs/${scoped.id}/scopes`)
      .set(...bearer(t.adminToken))
      .send({ scopes: [] })
      .expect(200);
    release();

    const ended = async () =>
      (
        await t.http
          .get(`/api/v1/runs/${run.body.id}`)
          .set(...bearer(scoped.keys.viewer))
          .expect(200)
      ).body as { status: string };
    await eventually(async () => (await ended()).status !== 'running');
    const [recall]: { status: string }[] = await db().query(`SELECT status FROM tool_call WHERE run_id = $1 AND tool = 'recall_memories'`, [run.body.id]);
    expect(recall?.status).toBeUndefined();
    const events: { type: string; data: { name?: string; error?: { code: string } } }[] = await db().query(
      `SELECT type, data FROM run_event WHERE run_id = $1 ORDER BY seq`,
      [run.body.id],
    );
    expect(events.find((e) => e.data.name === 'recall_memories' && e.type.startsWith('tool_call.'))).toMatchObject({
      type: 'tool_call.failed',
      data: { error: { code: 'scope_not_granted' } },
    });
  }, 60_000);
});
