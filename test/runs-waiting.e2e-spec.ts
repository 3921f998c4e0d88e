import { DataSource } from 'typeorm';
import { RunsRepository } from '../src/runs/runs.repository';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * A run waiting for approval is woken by its calls, not found by every poll: every poll of every
 * node probed every waiting run's calls, and one organization's 21,800 waiting runs made each poll
 * take 8.8 s, every other organization's resumed runs waiting behind it (fuzz session 29). A paused
 * run is not looked at before its last approval expires, unless one of its calls settles (a
 * trigger on tool_call) or settled while the step that paused it ran (`wakes`).
 */
describe('runs waiting for approval (e2e)', () => {
  let t: TestApp;
  let db: DataSource;
  let model: ScriptedModel;
  let org: TestOrg;
  let agentId: string;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: {
        runs: testRunsConfig({ modelRetries: 0 }),
      },
    });
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
      .send({ slug: 'waiting', name: 'Waiting' })
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

  /** A run that asks for one approval, and what it is once paused. */
  async function pausedRun(): Promise<{ id: string; approvalId: string }> {
    model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }, { text: 'Sent.' }));
    const res = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=10')
      .send({ input: 'Tell Ann' })
      .expect(201);
    expect(res.body.status).toBe('waiting_for_approval');
    return { id: res.body.id, approvalId: res.body.pendingApprovalIds[0] };
  }
  const runRow = async (id: string) =>
    (
      (await db.query(`SELECT status, wakes, not_before, lease_owner FROM run WHERE id = $1`, [id])) as {
        status: string;
        wakes: number;
        not_before: Date | null;
      }[]
    )[0];
  const expiryOf = async (approvalId: string) =>
    ((await db.query(`SELECT approval_expires_at FROM tool_call WHERE approval_id = $1`, [approvalId])) as { approval_expires_at: Date }[])[0]
      .approval_expires_at;
  async function statusOf(id: string, want: string): Promise<string> {
    for (let i = 0; i < 200; i++) {
      const row = await runRow(id);
      if (row.status === want) return row.status;
      await new Promise((r) => setTimeout(r, 50));
    }
    return (await runRow(id)).status;
  }

  it('is not looked at before its approval expires, and a decision wakes it at once', async () => {
    const run = await pausedRun();
    const paused = await runRow(run.id);
    // Gated until the approval would expire: no poll probes it meanwhile.
    expect(paused).toMatchObject({ status: 'waiting_for_approval', wakes: 0 });
    expect(paused.not_before?.getTime()).toBe((await expiryOf(run.approvalId)).getTime());
    await new Promise((r) => setTimeout(r, 300));
    expect((await runRow(run.id)).status).toBe('waiting_for_approval');
    // The decision's transaction opens the gate (the trigger), and the run resumes.
    await t.http
      .post(`/api/v1/approvals/${run.approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);
    expect(await statusOf(run.id, 'succeeded')).toBe('succeeded');
    expect((await runRow(run.id)).wakes).toBe(1);
  });

  it('resumes once its approval expires', async () => {
    const run = await pausedRun();
    // The approval and the gate both past: the claim's own test of expiry lets it through.
    await db.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE approval_id = $1`, [run.approvalId]);
    await db.query(`UPDATE run SET not_before = now() - interval '1 second' WHERE id = $1`, [run.id]);
    expect(await statusOf(run.id, 'succeeded')).toBe('succeeded');
  });

  it('a settlement the pausing step did not see leaves the gate open', async () => {
    const run = await pausedRun();
    const repo = t.app.get(RunsRepository);
    const [call] = (await db.query(`SELECT id FROM tool_call WHERE approval_id = $1`, [run.approvalId])) as { id: string }[];
    // As if the step that paused it had read the run before a call settled (wakes 0, now 1), and
    // held the lease: its pause must not gate the run until the expiry.
    await db.query(`UPDATE run SET status = 'running', lease_owner = 'a-step', lease_expires_at = now() + interval '1 minute', wakes = 1 WHERE id = $1`, [
      run.id,
    ]);
    const pause = { status: 'waiting_for_approval' as const, pendingToolCallIds: [call.id], release: true };
    expect(await repo.save({ id: run.id, org_id: org.id, wakes: 0 }, 'a-step', pause, [])).toBe(true);
    expect((await runRow(run.id)).not_before).toBeNull();
    // The step that saw every settlement gates it.
    await db.query(`UPDATE run SET status = 'running', lease_owner = 'a-step', lease_expires_at = now() + interval '1 minute' WHERE id = $1`, [run.id]);
    expect(await repo.save({ id: run.id, org_id: org.id, wakes: 1 }, 'a-step', pause, [])).toBe(true);
    expect((await runRow(run.id)).not_before?.getTime()).toBe((await expiryOf(run.approvalId)).getTime());
    await t.http
      .post(`/api/v1/approvals/${run.approvalId}/reject`)
      .set(...bearer(org.keys.approver))
      .send({ reason: 'No' })
      .expect(200);
    expect(await statusOf(run.id, 'succeeded')).toBe('succeeded');
  });
});
