import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { RunStorageRepository } from '../src/runtime/run-storage.repository';
import { IdempotencyRepository } from '../src/tool-calls/idempotency.repository';
import { RunUsageCompactor } from '../src/runtime/run-usage-compactor';
import { RunRetentionSweeper } from '../src/runs/run-retention.service';
import { ExecFixturesModule, FX_EXEC_SCOPE, HUGE_ROWS } from './fixtures/exec-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { testRunsConfig } from './support/runs-config';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

const LIMIT = 60_000;

/**
 * What an organization's runs and tool calls store is bounded (RUNS_MAX_BYTES_PER_ORG; attack
 * round 9, D-F4: one agent key wrote about 30 MiB a second). The database keeps the total as
 * appended changes; past the bound a run is not started and a whole result is not kept apart. On
 * either database.
 */
describe("an organization's runs' storage (e2e)", () => {
  let t: TestApp;
  let model: ScriptedModel;
  let slugs = 0;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'done' }));
    t = await createTestApp({
      imports: [ExecFixturesModule],
      config: { runs: testRunsConfig(), storage: { knowledgeBytesPerOrg: 1e9, agentBytesPerOrg: 1e9, runBytesPerOrg: LIMIT, skillsPerOrg: 10 } },
    });
    await t.app.listen(0, '127.0.0.1');
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const db = () => t.app.get(DataSource);
  const storage = () => t.app.get(RunStorageRepository);

  /** An organization with an agent that both runs on the scripted model and offers the fixture tools. */
  async function orgWithAgent(): Promise<{ org: TestOrg; agentId: string }> {
    const org = await createOrg(t, [FX_EXEC_SCOPE]);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const agentId = await publishAgent(t, org, `store-${++slugs}`, {
      instructions: 'x',
      capabilities: [{ id: 'fx-exec-tools' }],
      model: { provider: provider.body.id, name: 'scripted-1' },
    });
    return { org, agentId };
  }

  const startRun = (org: TestOrg, agentId: string, input: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=20')
      .send({ input });

  /** What the organization's rows weigh, each as its trigger measured it: the kept total must equal it. */
  async function rowsWeigh(orgId: string): Promise<number> {
    const [{ bytes }]: { bytes: string }[] = await db().query(
      `SELECT ((SELECT coalesce(sum(stored_bytes), 0) FROM run WHERE org_id = $1)
             + (SELECT coalesce(sum(data_bytes), 0) FROM run_event WHERE org_id = $1)
             + (SELECT coalesce(sum(stored_bytes), 0) FROM tool_call WHERE org_id = $1)
             + (SELECT coalesce(sum(stored_bytes), 0) FROM tool_call_result WHERE org_id = $1)
             + (SELECT coalesce(sum(stored_bytes), 0) FROM idempotency_key WHERE org_id = $1))::text AS bytes`,
      [orgId],
    );
    return Number(bytes);
  }

  /** Text that does not compress: a run's input is measured as stored, and 'é' repeated stores in a few hundred bytes. */
  const incompressible = (bytes: number) =>
    randomBytes(Math.ceil((bytes * 3) / 4))
      .toString('base64')
      .slice(0, bytes);

  it('refuses a run once the runs store the bound, whole, and counts what each run and event holds', async () => {
    const { org, agentId } = await orgWithAgent();
    const other = await orgWithAgent();
    // Input and transcript each hold the input: about 40 KB a run.
    const first = await startRun(org, agentId, incompressible(20_000)).expect(201);
    expect(first.body.status).toBe('succeeded');
    const stored = await storage().stored(org.id);
    expect(stored).toBeGreaterThan(40_000);
    expect(stored).toBe(await rowsWeigh(org.id));

    await startRun(org, agentId, incompressible(20_000)).expect(201);
    const runs = async () => Number((await db().query(`SELECT count(*)::int AS n FROM run WHERE org_id = $1`, [org.id]))[0].n);
    expect(await runs()).toBe(2);
    const refused = await startRun(org, agentId, 'small').expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('RUNS_MAX_BYTES_PER_ORG') });
    expect(refused.body.detail).toContain(`hold ${await storage().stored(org.id)} bytes`);
    expect(await runs()).toBe(2);

    // Another organization's bound is its own.
    await startRun(other.org, other.agentId, incompressible(20_000)).expect(201);
    expect(await storage().stored(other.org.id)).toBe(await rowsWeigh(other.org.id));
  });

  it('keeps no whole result apart once full: the call still answers, cut, without resultRef', async () => {
    const { org, agentId } = await orgWithAgent();
    const call = () =>
      t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...bearer(org.keys.agent))
        .send({ tool: 'fx-exec-offload', arguments: { tag: 'store' } })
        .expect(200);
    const kept = await call();
    expect(kept.body.resultRef).toBe(`/api/v1/tool-calls/${kept.body.id}/result`);
    // The whole result (about 40 KB of JSON) is counted; its cut copy in the call is under 2 KB and is not.
    expect(await storage().stored(org.id)).toBeGreaterThan(JSON.stringify(HUGE_ROWS).length);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));

    await call();
    const full = await call();
    expect(full.body).toMatchObject({ status: 'succeeded', resultTruncated: true });
    expect(full.body.resultRef).toBeUndefined();
    const none = await t.http
      .get(`/api/v1/tool-calls/${full.body.id}/result`)
      .set(...bearer(org.keys.viewer))
      .expect(404);
    expect(none.body.code).toBe('result_not_available');
    await startRun(org, agentId, 'small').expect(409);
  });

  it("counts a call's result past 2 KB, and folds changes into one row per organization without losing one, also while runs write", async () => {
    const { org, agentId } = await orgWithAgent();
    const small = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'fx-exec-read', arguments: { query: 'q' } })
      .expect(200);
    const before = await storage().stored(org.id);
    expect(before).toBe(await rowsWeigh(org.id));
    // Results are written once by the executor; mended by hand, the total follows both ways.
    const setResult = (result: unknown) => db().query(`UPDATE tool_call SET result = $2::jsonb WHERE id = $1`, [small.body.id, JSON.stringify(result)]);
    await setResult({ text: incompressible(5000) });
    expect(await storage().stored(org.id)).toBeGreaterThan(before + 5000);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
    await setResult(small.body.result);
    expect(await storage().stored(org.id)).toBe(before);

    const compactor = t.app.get(RunUsageCompactor);
    await Promise.all([startRun(org, agentId, 'one').expect(201), storage().compact(), startRun(org, agentId, 'two').expect(201), storage().compact()]);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
    // Both runs have finished (answered after Prefer: wait): one fold leaves one row.
    await compactor.sweepOnce();
    const rows: { n: number }[] = await db().query(`SELECT count(*)::int AS n FROM run_usage WHERE org_id = $1`, [org.id]);
    expect(rows[0].n).toBe(1);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
  });

  it("counts an approver's edited arguments as the call's own (attack round 19, Z-F3: they were counted by nothing)", async () => {
    const { org, agentId } = await orgWithAgent();
    const call = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'fx-exec-read', arguments: { query: 'q' } })
      .expect(200);
    const before = await storage().stored(org.id);
    // What an approval with edited arguments stores (approvals.repository): set by hand, the total follows both ways.
    const setEdited = (value: unknown) =>
      db().query(`UPDATE tool_call SET executed_arguments = $2::jsonb WHERE id = $1`, [call.body.id, value === null ? null : JSON.stringify(value)]);
    await setEdited({ query: incompressible(20_000) });
    expect(await storage().stored(org.id)).toBeGreaterThan(before + 20_000);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
    await setEdited(null);
    expect(await storage().stored(org.id)).toBe(before);
  });

  it("counts the answer an idempotency key keeps, and gives it back when the key expires (Z-N1: a second copy of each call's arguments, counted by nothing)", async () => {
    const { org, agentId } = await orgWithAgent();
    await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .set('Idempotency-Key', 'kept-answer')
      .send({ tool: 'fx-exec-read', arguments: { query: 'q' } })
      .expect(200);
    const before = await storage().stored(org.id);
    expect(before).toBe(await rowsWeigh(org.id));
    // The answer of a call whose arguments or result are large (written by the statement that records
    // the call, ToolCallsRepository): set by hand, the total follows both ways.
    const setAnswer = (body: unknown) =>
      db().query(`UPDATE idempotency_key SET response_body = $2::jsonb WHERE org_id = $1 AND key = 'kept-answer'`, [org.id, JSON.stringify(body)]);
    await setAnswer({ arguments: { query: incompressible(20_000) } });
    const kept = await storage().stored(org.id);
    expect(kept).toBeGreaterThan(before + 20_000);
    expect(kept).toBe(await rowsWeigh(org.id));
    // A replay answers what was kept.
    const replay = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .set('Idempotency-Key', 'kept-answer')
      .send({ tool: 'fx-exec-read', arguments: { query: 'q' } })
      .expect(200);
    expect(replay.body.arguments.query).toHaveLength(20_000);
    // Past its 24 hours the sweep removes the key, and its bytes are given back.
    await db().query(`UPDATE idempotency_key SET expires_at = now() - interval '1 second' WHERE org_id = $1`, [org.id]);
    expect(await t.app.get(IdempotencyRepository).deleteExpired()).toBeGreaterThanOrEqual(1);
    expect(await storage().stored(org.id)).toBe(before);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
  });

  it('removes runs finished more than RUN_RETENTION_DAYS ago with their events, gives their bytes back, and keeps the rest', async () => {
    const { org, agentId } = await orgWithAgent();
    const old = await startRun(org, agentId, incompressible(20_000)).expect(201);
    const recent = await startRun(org, agentId, incompressible(20_000)).expect(201);
    await startRun(org, agentId, 'small').expect(409);
    const sweeper = t.app.get(RunRetentionSweeper);
    // Off by default: nothing is removed, however old.
    await db().query(`UPDATE run SET completed_at = now() - interval '10 days' WHERE id = $1`, [old.body.id]);
    expect(await sweeper.sweepOnce()).toBe(0);

    t.config.runs.retentionMs = 7 * 86_400_000;
    try {
      expect(await sweeper.sweepOnce()).toBe(1);
    } finally {
      t.config.runs.retentionMs = undefined;
    }
    await t.http
      .get(`/api/v1/runs/${old.body.id}`)
      .set(...bearer(org.keys.viewer))
      .expect(404);
    expect((await db().query(`SELECT count(*)::int AS n FROM run_event WHERE run_id = $1`, [old.body.id]))[0].n).toBe(0);
    await t.http
      .get(`/api/v1/runs/${recent.body.id}`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(await storage().stored(org.id)).toBe(await rowsWeigh(org.id));
    expect(await storage().stored(org.id)).toBeLessThan(LIMIT);
    await startRun(org, agentId, 'small').expect(201);
  });
});
