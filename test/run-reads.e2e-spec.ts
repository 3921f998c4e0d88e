import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { RunRow, RunsRepository } from '../src/runs/runs.repository';
import { until } from './support/until';

/**
 * `GET /runs/{id}` answers a run that may hold 8,000,000 characters of JSON. Parsed from its row
 * and written again on the node, that took the event loop about 100 ms a read, and one viewer
 * key's 8 reads at once made another organization's requests wait 1.1 s (attack round 13, K-F6).
 * The answer is now the database's JSON, sent as it is: the same run, field for field. So is a
 * page of `GET /runs`, which parsed and wrote every run of the page (up to 4 MB) the same way.
 */
describe('reading a run (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let agent: string;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    // Runs whose model hangs must stay running until the test cancels them, however busy the machine.
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig({ modelRetries: 0, modelTimeoutMs: 120_000 }) } });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    agent = await publishAgent(t, org, 'reads', {
      instructions: 'x',
      capabilities: [{ id: 'fx-run-tools' }],
      model: { provider: provider.body.id, name: 'scripted-1' },
    });
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const start = (body: object) =>
    t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=10')
      .send(body)
      .expect(201)
      .then((res) => {
        answered.set(res.body.id, res.body);
        return res.body.id as string;
      });
  /** What starting (and cancelling) each run answered: the same JSON. */
  const answered = new Map<string, unknown>();

  it('answers each run as the list does, field for field, without parsing its row on the node; starting and cancelling answer the same', async () => {
    model.setScript(sequence({ toolCalls: [{ id: 'c1', name: 'lookup_order', arguments: '{"query":"A-1"}' }] }, { text: 'shipped "A-1"\n\u0001' }));
    const succeeded = await start({
      input: 'where is \u202eA-1?',
      messages: [{ role: 'assistant', content: 'hello' }],
      workerType: 'researcher',
      profile: 'deep',
    });
    model.setScript(() => ({ status: 400, body: { error: { message: 'no such model' } } }));
    const failed = await start({ input: 'x' });
    model.setScript(() => ({ hang: true }));
    const cancelled = await start({ input: 'y' });
    answered.set(
      cancelled,
      (
        await t.http
          .post(`/api/v1/runs/${cancelled}/cancel`)
          .set(...bearer(org.keys.agent))
          .expect(200)
      ).body,
    );
    const running = await t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .send({ input: 'z' })
      .expect(201)
      .then((res) => res.body.id as string);

    const listed = (
      await t.http
        .get('/api/v1/runs')
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body.items as { id: string }[];
    const find = jest.spyOn(t.app.get(RunsRepository), 'find');
    try {
      for (const id of [succeeded, failed, cancelled, running]) {
        const res = await t.http
          .get(`/api/v1/runs/${id}`)
          .set(...bearer(org.keys.viewer))
          .expect(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        const expected = listed.find((r) => r.id === id);
        // The running one may have moved on (its model call) between the two reads; the others are done.
        if (id === running) expect(res.body).toMatchObject({ id, input: 'z', status: 'running' });
        else expect([res.body, answered.get(id)]).toEqual([expected, expected]);
      }
      // Before the fix each read parsed the whole row (its transcript) on the node.
      expect(find).not.toHaveBeenCalled();
    } finally {
      find.mockRestore();
    }
    expect(listed.find((r) => r.id === succeeded)).toMatchObject({
      output: 'shipped "A-1"\n\u0001',
      profile: 'deep',
      workerType: 'researcher',
      completedAt: expect.any(String),
    });
    expect(listed.find((r) => r.id === failed)).toMatchObject({ status: 'failed', error: { code: 'model_error' } });
    await t.http
      .get('/api/v1/runs/00000000-0000-4000-8000-000000000000')
      .set(...bearer(org.keys.viewer))
      .expect(404);
    const other = await createOrg(t);
    await t.http
      .get(`/api/v1/runs/${succeeded}`)
      .set(...bearer(other.keys.viewer))
      .expect(404);
  }, 60_000);

  it('cancels a run, finished or not, without parsing its row on the node (attack round 16, S-F4)', async () => {
    model.setScript(sequence({ text: 'done' }));
    const done = await start({ input: 'z' });
    // A transcript of 80,000 small messages (9.5 MB), as a long run's: parsed on every cancel before the fix.
    await t.app
      .get(DataSource)
      .query(
        `UPDATE run SET messages = (SELECT jsonb_agg(jsonb_build_object('role', 'user', 'content', repeat('x', 100))) FROM generate_series(1, 80000)) WHERE id = $1`,
        [done],
      );
    model.setScript(() => ({ hang: true }));
    const hung = (
      await t.http
        .post(`/api/v1/agents/${agent}/runs`)
        .set(...bearer(org.keys.agent))
        .send({ input: 'y' })
        .expect(201)
    ).body.id as string;
    const find = jest.spyOn(t.app.get(RunsRepository), 'find');
    try {
      for (const id of [done, hung]) {
        const cancelled = await t.http
          .post(`/api/v1/runs/${id}/cancel`)
          .set(...bearer(org.keys.agent))
          .expect(200);
        const read = await t.http
          .get(`/api/v1/runs/${id}`)
          .set(...bearer(org.keys.viewer))
          .expect(200);
        expect(cancelled.body).toEqual(read.body);
        expect(cancelled.body.status).toBe(id === done ? 'succeeded' : 'cancelled');
        if (id === done) expect(cancelled.body.messages).toHaveLength(80_000);
      }
      expect(find).not.toHaveBeenCalled();
    } finally {
      find.mockRestore();
    }
    const other = await createOrg(t);
    await t.http
      .post(`/api/v1/runs/${done}/cancel`)
      .set(...bearer(other.keys.agent))
      .expect(404);
  }, 60_000);

  it('lists runs as their rows hold them, field for field; a page ends at its byte budget, and paging answers each run once', async () => {
    const ds = t.app.get(DataSource);
    const insert = (orgId: string, agentId: string, keyId: string, input: string, messages: unknown[]) =>
      ds.query(
        `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, error_code, error_message, completed_at)
         VALUES ($1, $2, $3, 1, 'failed', $4, $5::jsonb, $6, 'model_error', 'gone \u2028 "quoted"', now()) RETURNING id`,
        [randomUUID(), orgId, agentId, input, JSON.stringify(messages), keyId],
      );
    // Six runs of about a megabyte each: a page of 4 MB holds four.
    for (let i = 0; i < 6; i++)
      await insert(org.id, agent, org.keyIds.agent, `large ${i} \u0001 \u202e`, [{ role: 'user', content: `${i}`.repeat(1_000_000) }]);
    const other = await createOrg(t);
    await insert(other.id, await publishAgent(t, other, 'theirs', { instructions: 'x', capabilities: [] }), other.keyIds.agent, 'not yours', []);

    const pages: { items: { id: string }[]; nextCursor: string | null }[] = [];
    let cursor: string | null = null;
    do {
      const res: Response = await t.http
        .get(`/api/v1/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      pages.push(res.body);
      cursor = res.body.nextCursor;
    } while (cursor !== null);
    expect(pages.length).toBeGreaterThan(1);
    expect(pages[0].items.length).toBeLessThan(6);
    const listed = pages.flatMap((p) => p.items);
    const rows: RunRow[] = await ds.query(`SELECT * FROM run WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, [org.id]);
    expect(listed.map((r) => r.id)).toEqual(rows.map((r) => r.id));
    expect(listed).toEqual(rows.map(viewOfRow));

    const failed = await t.http
      .get(`/api/v1/runs?status=failed&agentId=${agent}&limit=3`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(failed.body.items.map((r: { status: string }) => r.status)).toEqual(['failed', 'failed', 'failed']);
    expect(failed.body.nextCursor).toEqual(expect.any(String));
    const none = await t.http
      .get(`/api/v1/runs?status=waiting_for_approval`)
      .set(...bearer(other.keys.viewer))
      .expect(200);
    expect(none.body).toEqual({ items: [], nextCursor: null });
  }, 120_000);

  it("reads one organization's runs two at a time on a node, others' beside them, and refuses what would wait past 64", async () => {
    // A run of up to 8 MB passes through the node at each read: one key's reads at its whole rate
    // limit took the node from every other organization (attack round 13, K-F6's rest).
    model.setScript(sequence({ text: 'done' }));
    const id = await start({ input: 'read me' });
    const other = await createOrg(t);
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const read = RunsRepository.prototype.viewText;
    const spy = jest.spyOn(RunsRepository.prototype, 'viewText').mockImplementation(async function (this: RunsRepository, orgId, runId, agents) {
      running.set(orgId, (running.get(orgId) ?? 0) + 1);
      most.set(orgId, Math.max(most.get(orgId) ?? 0, running.get(orgId)!));
      try {
        await held;
        return await read.call(this, orgId, runId, agents);
      } finally {
        running.set(orgId, running.get(orgId)! - 1);
      }
    });
    try {
      const get = (key: string, run: string) => t.http.get(`/api/v1/runs/${run}`).set(...bearer(key));
      let refusedSoFar = 0;
      const reads = Array.from({ length: 70 }, () =>
        get(org.keys.viewer, id).then((r) => {
          if (r.status === 429) refusedSoFar++;
          return r;
        }),
      );
      // Nothing is answered while the two reads are held: every request either waits its turn or is refused.
      await until(
        async () => [running.get(org.id), refusedSoFar],
        ([n, refused]) => n === 2 && refused === 70 - 2 - 64,
        30_000,
        10,
      );
      // Another organization's read is not in that line: it reaches the database while the first's wait.
      const theirs = get(other.keys.viewer, id).then((r) => r);
      await until(
        async () => running.get(other.id),
        (n) => n === 1,
        30_000,
        10,
      );
      release();
      const answers = await Promise.all(reads);
      expect((await theirs).status).toBe(404);
      expect(most.get(org.id)).toBe(2);
      const refused = answers.filter((r) => r.status === 429);
      expect(answers.filter((r) => r.status === 200).length + refused.length).toBe(70);
      expect(refused.length).toBe(70 - 2 - 64);
      expect(refused[0].headers['retry-after']).toBe('1');
      expect(refused[0].body.code).toBe('rate_limited');
    } finally {
      release();
      spy.mockRestore();
    }
  }, 120_000);
});

/** A run's row as the API shows it, written on the node: what the database's JSON must equal. */
function viewOfRow(r: RunRow): Record<string, unknown> {
  return {
    id: r.id,
    agentId: r.agent_id,
    version: r.version,
    status: r.status,
    input: r.input,
    messages: r.messages,
    toolCallIds: r.tool_call_ids,
    pendingApprovalIds: r.pending_approval_ids,
    usage: r.usage,
    createdAt: new Date(r.created_at).toISOString(),
    ...(r.output !== null ? { output: r.output } : {}),
    ...(r.error_code ? { error: { code: r.error_code, message: r.error_message ?? '' } } : {}),
    ...(r.profile !== null ? { profile: r.profile } : {}),
    ...(r.worker_type !== null ? { workerType: r.worker_type } : {}),
    ...(r.completed_at ? { completedAt: new Date(r.completed_at).toISOString() } : {}),
  };
}
