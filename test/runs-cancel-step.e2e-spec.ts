import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { RunWorker } from '../src/runs/run-worker.service';
import { RunsRepository } from '../src/runs/runs.repository';
import { ToolCallsRepository } from '../src/tool-calls/tool-calls.repository';
import { holdLookup, RunFixturesModule, runExecutions } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * A cancelled run's step asks for no further tool call (attack round 8, B-F3): the calls under way
 * finish, none starts after the cancel, no approval is asked for, and an approval of a run that
 * ended is never granted. On either database.
 */
describe('a cancelled run stops its step (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let providerId: string;
  let slugs = 0;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig() } });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t, []);
    const res = await t.http
      .post('/api/v1/model-providers')
      .set(...as('admin'))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    providerId = res.body.id;
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const db = () => t.app.get(DataSource);

  async function agent(): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: `cancel-${++slugs}`, name: `Cancel ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...as('builder'))
      .expect(201);
    return a.body.id;
  }

  async function eventually(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const callsOf = (runId: string): Promise<{ tool: string; status: string; created_at: Date; approval_id: string | null }[]> =>
    db().query(`SELECT tool, status, created_at, approval_id FROM tool_call WHERE run_id = $1 ORDER BY created_at`, [runId]);

  /**
   * One answer of 12 calls: a side effect (an approval), four lookups held by the test (with the
   * approval, the four lanes of the step are busy), six more lookups and a second side effect.
   */
  async function stepUnderWay(tag: string): Promise<{ runId: string; release: () => void }> {
    const held = [1, 2, 3, 4].map((i) => `${tag}-held-${i}`);
    const releases = held.map((q) => holdLookup(q));
    const toolCalls = [
      { id: 'send-1', name: 'send_message', arguments: '{"to":"a@example.com","body":"first"}' },
      ...held.map((q, i) => ({ id: `held-${i}`, name: 'lookup_order', arguments: JSON.stringify({ query: q }) })),
      ...[1, 2, 3, 4, 5, 6].map((i) => ({ id: `more-${i}`, name: 'lookup_order', arguments: JSON.stringify({ query: `${tag}-more-${i}` }) })),
      { id: 'send-2', name: 'send_message', arguments: '{"to":"a@example.com","body":"second"}' },
    ];
    model.setScript(sequence({ toolCalls }, { text: 'never' }));
    const agentId = await agent();
    const run = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .send({ input: 'go' })
      .expect(201);
    const runId: string = run.body.id;
    await eventually(() => held.every((q) => runExecutions.some((e) => e.args.query === q)));
    await eventually(async () => (await callsOf(runId)).some((c) => c.status === 'pending_approval'));
    return { runId, release: () => releases.forEach((r) => r()) };
  }

  async function afterTheStep(runId: string): Promise<void> {
    const worker = t.app.get(RunWorker);
    await eventually(() => !worker.isStepping(runId));
    await eventually(async () => (await callsOf(runId)).filter((c) => c.tool === 'lookup_order').length === 4);
    // Time for a call that should not be made to show up.
    await new Promise((r) => setTimeout(r, 300));
  }

  it('cancelled on the node stepping it: the calls under way finish, no call starts after, the pending approval is rejected and approving it is 409', async () => {
    const { runId, release } = await stepUnderWay('local');
    const executed = runExecutions.length;
    const cancelled = await t.http
      .post(`/api/v1/runs/${runId}/cancel`)
      .set(...as('agent'))
      .expect(200);
    expect(cancelled.body.status).toBe('cancelled');
    const cancelledAt = new Date(cancelled.body.completedAt).getTime();
    release();
    await afterTheStep(runId);

    const calls = await callsOf(runId);
    // The approval asked before the cancel, and the four lookups under way; nothing of the seven left.
    expect(calls.map((c) => `${c.tool} ${c.status}`).sort()).toEqual([...Array(4).fill('lookup_order succeeded'), 'send_message rejected']);
    expect(calls.every((c) => c.created_at.getTime() <= cancelledAt)).toBe(true);
    expect(runExecutions.slice(executed).filter((e) => e.runId === runId)).toEqual([]);
    const approvals: { id: string; status: string }[] = await db().query(
      `SELECT a.id, a.status FROM approval a JOIN tool_call c ON c.id = a.tool_call_id WHERE c.run_id = $1`,
      [runId],
    );
    expect(approvals.map((a) => a.status)).toEqual(['rejected']);
    const late = await t.http
      .post(`/api/v1/approvals/${approvals[0].id}/approve`)
      .set(...as('approver'))
      .send({})
      .expect(409);
    expect(late.body.code).toBe('approval_already_decided');
    expect(runExecutions.filter((e) => e.runId === runId && e.tool === 'send_message')).toEqual([]);
    // The run counts the calls made for it, also those that finished after the cancel.
    await eventually(async () => (await t.http.get(`/api/v1/runs/${runId}`).set(...as('viewer'))).body.toolCallIds.length === 5);
  });

  it('cancelled elsewhere (this node not told): the executor refuses the calls left, and none is written', async () => {
    const { runId, release } = await stepUnderWay('remote');
    // As another node cancels: the run's row only; this node's step learns it from the executor.
    const cancelled = await t.app.get(RunsRepository).cancel(org.id, runId, [{ type: 'run.cancelled', data: { by: org.keyIds.agent } }], []);
    expect(cancelled).toBe(true);
    expect(t.app.get(RunWorker).isStepping(runId)).toBe(true);
    release();
    await afterTheStep(runId);

    const calls = await callsOf(runId);
    expect(calls.map((c) => c.tool).sort()).toEqual([...Array(4).fill('lookup_order'), 'send_message']);
    expect(runExecutions.filter((e) => e.runId === runId && String(e.args.query).startsWith('remote-more'))).toEqual([]);
    // Refused, each audited as a denial naming the run: at most one per lane of the step.
    const denied: { data: { code: string; detail: string } }[] = await db().query(
      `SELECT data FROM audit_event WHERE type = 'tool_call.denied' AND data->>'runId' = $1`,
      [runId],
    );
    expect(denied.length).toBeGreaterThan(0);
    expect(denied.length).toBeLessThanOrEqual(4);
    for (const d of denied) expect(d.data).toMatchObject({ code: 'conflict', detail: expect.stringContaining(`The run ${runId} is cancelled`) });
  });

  it("a run's call that waits for approval is not written once its run has ended, in the statement that writes it", async () => {
    const { runId, release } = await stepUnderWay('race');
    release();
    await t.http
      .post(`/api/v1/runs/${runId}/cancel`)
      .set(...as('agent'))
      .expect(200);
    const [sample]: { agent_id: string; version: number }[] = await db().query(`SELECT agent_id, version FROM run WHERE id = $1`, [runId]);
    const call = {
      id: randomUUID(),
      orgId: org.id,
      agentId: sample.agent_id,
      version: sample.version,
      tool: 'send_message',
      capabilityId: 'fx-run-tools',
      toolId: 'send_message',
      runId,
      entryPoint: 'run' as const,
      arguments: { to: 'b@example.com', body: 'late' },
      argumentsHash: 'h',
      requestedBy: org.keyIds.agent,
      createdAt: new Date(),
    };
    const approval = { id: randomUUID(), reason: 'side_effecting' as const, expiresAt: new Date(Date.now() + 60_000), awaitingRequester: false };
    const repo = t.app.get(ToolCallsRepository);
    // As when the executor's read came before the cancel: the write itself refuses.
    expect(await repo.insertPending(call, approval, [])).toBe(false);
    expect(await db().query(`SELECT id FROM tool_call WHERE id = $1`, [call.id])).toEqual([]);
    expect(await db().query(`SELECT id FROM approval WHERE id = $1`, [approval.id])).toEqual([]);
    // A REST call tagged with the same run id is a client's own: written as before.
    expect(await repo.insertPending({ ...call, id: randomUUID(), entryPoint: 'rest' }, { ...approval, id: randomUUID() }, [])).toBe(true);
  });

  it('approving a call whose run has ended is 409 approval_already_decided, judged in the decision, and nothing runs', async () => {
    model.setScript(sequence({ toolCalls: [{ id: 's1', name: 'send_message', arguments: '{"to":"c@example.com","body":"x"}' }] }, { text: 'never' }));
    const agentId = await agent();
    const run = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .set('Prefer', 'wait=10')
      .send({ input: 'go' })
      .expect(201);
    expect(run.body.status).toBe('waiting_for_approval');
    // Ended without its approvals settled (as a path that missed them would leave it).
    await db().query(`UPDATE run SET status = 'cancelled', completed_at = now(), lease_owner = NULL WHERE id = $1`, [run.body.id]);
    const [approvalId] = run.body.pendingApprovalIds;
    const res = await t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...as('approver'))
      .send({})
      .expect(409);
    expect(res.body.code).toBe('approval_already_decided');
    expect(runExecutions.filter((e) => e.runId === run.body.id)).toEqual([]);
    const [call]: { status: string }[] = await db().query(`SELECT status FROM tool_call WHERE run_id = $1`, [run.body.id]);
    expect(call.status).toBe('pending_approval');
  });
});
