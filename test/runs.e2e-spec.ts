import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { RunWorker } from '../src/runs/run-worker.service';
import { holdLookup, RunFixturesModule, runExecutions, slowLookups } from './fixtures/run-fixtures.module';
import { ChatRequest, ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { metricSample, scrapeMetrics } from './support/metrics';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { MAX_PARALLEL_TOOL_CALLS, MAX_STEP_FAILURES } from '../src/runs/run-engine.service';
import { MAX_TOOL_CALLS_PER_ANSWER } from '../src/runs/model-answer';
import { MAX_TRANSCRIPT_CHARS } from '../src/runs/conversation';
import { EVENT_BATCH_BYTES, RunsRepository } from '../src/runs/runs.repository';
import { PositionSeals } from '../src/secrets/position-seals';
import { testRunsConfig } from './support/runs-config';

/**
 * API.md "Models and runs", on either database, against an OpenAI-compatible server on a loopback
 * port that answers from a script in the real wire format (streamed chunks, parallel tool calls).
 */
describe('agent runs (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let providerId: string;
  let slugs = 0;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: {
        runs: testRunsConfig(),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t, []);
    const res = await t.http
      .post('/api/v1/model-providers')
      .set(...as('admin'))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url, apiKey: 'sk-test-secret-123' })
      .expect(201);
    providerId = res.body.id;
    // Starting an app with a fresh database can be slow on a busy machine.
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const as = (role: keyof TestOrg['keys'], o: TestOrg = org) => bearer(o.keys[role]);

  async function agentWith(draft: object, o: TestOrg = org): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as('builder', o))
      .send({ slug: `run-${++slugs}`, name: `Run ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as('builder', o))
      .send(draft)
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...as('builder', o))
      .expect(201);
    return a.body.id;
  }

  const modelRef = (extra: object = {}) => ({ provider: providerId, name: 'scripted-1', ...extra });

  function startRun(agentId: string, body: object, wait = 10) {
    return t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .set('Prefer', `wait=${wait}`)
      .send(body);
  }

  async function until(runId: string, statuses: string[], ms = 10_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = await t.http
        .get(`/api/v1/runs/${runId}`)
        .set(...as('viewer'))
        .expect(200);
      if (statuses.includes(res.body.status) || Date.now() > deadline) return res.body;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Requests the scripted server got since `from`. */
  const since = (from: number): ChatRequest[] => model.requests.slice(from);

  describe('model providers', () => {
    it('201 without the key; lists and reads it; the stored key is sealed', async () => {
      const res = await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'second', kind: 'openai-compatible', baseUrl: model.url, apiKey: 'sk-another-secret' })
        .expect(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'second',
        kind: 'openai-compatible',
        baseUrl: model.url,
        hasApiKey: true,
        createdAt: expect.any(String),
      });
      expect(JSON.stringify(res.body)).not.toContain('sk-another-secret');
      const list = await t.http
        .get('/api/v1/model-providers')
        .set(...as('viewer'))
        .expect(200);
      expect(list.body.items.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['second', 'scripted']));
      expect(JSON.stringify(list.body)).not.toContain('secret');
      const [row] = await t.app.get(DataSource).query(`SELECT api_key_sealed FROM model_provider WHERE id = $1`, [res.body.id]);
      expect(row.api_key_sealed).not.toContain('sk-another-secret');
      await t.http
        .get(`/api/v1/model-providers/${res.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      await t.http
        .delete(`/api/v1/model-providers/${res.body.id}`)
        .set(...as('admin'))
        .expect(204);
      await t.http
        .get(`/api/v1/model-providers/${res.body.id}`)
        .set(...as('viewer'))
        .expect(404);
    });

    it('400 on bad input naming the field; 409 on a taken name; 403 for a viewer; 422 egress_refused', async () => {
      const bad = await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'x y', kind: 'anthropic', baseUrl: 7, extra: 1 })
        .expect(400);
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['baseUrl', 'extra', 'kind', 'name']);
      await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
        .expect(409);
      await t.http
        .post('/api/v1/model-providers')
        .set(...as('viewer'))
        .send({ name: 'nope', kind: 'openai-compatible', baseUrl: model.url })
        .expect(403);
      const refused = await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'private', kind: 'openai-compatible', baseUrl: 'http://10.1.2.3/v1' })
        .expect(422);
      expect(refused.body).toMatchObject({ code: 'egress_refused' });
    });

    it('another organization sees none of them', async () => {
      const other = await createOrg(t, []);
      await t.http
        .get(`/api/v1/model-providers/${providerId}`)
        .set(...as('viewer', other))
        .expect(404);
      await t.http
        .delete(`/api/v1/model-providers/${providerId}`)
        .set(...as('admin', other))
        .expect(404);
    });

    it('publish refuses an unknown provider at model.provider; a bound provider cannot be deleted', async () => {
      const a = await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: `run-${++slugs}`, name: 'x' })
        .expect(201);
      await t.http
        .put(`/api/v1/agents/${a.body.id}/draft`)
        .set(...as('builder'))
        .send({ instructions: 'x', capabilities: [], model: { provider: '00000000-0000-4000-8000-000000000000', name: 'm' } })
        .expect(200);
      const res = await t.http
        .post(`/api/v1/agents/${a.body.id}/publish`)
        .set(...as('builder'))
        .expect(422);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'model.provider', code: 'unknown_resource' })]);
      const bad = await t.http
        .put(`/api/v1/agents/${a.body.id}/draft`)
        .set(...as('builder'))
        .send({ instructions: 'x', capabilities: [], model: { provider: providerId, name: '', temperature: 9, extra: true } })
        .expect(400);
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['model.extra', 'model.name', 'model.temperature']);

      const p = await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'bound', kind: 'openai-compatible', baseUrl: model.url })
        .expect(201);
      await agentWith({ instructions: 'x', capabilities: [], model: { provider: p.body.id, name: 'm' } });
      const inUse = await t.http
        .delete(`/api/v1/model-providers/${p.body.id}`)
        .set(...as('admin'))
        .expect(409);
      expect(inUse.body.code).toBe('resource_in_use');
    });
  });

  describe('runs', () => {
    it("409 model_not_configured for an agent without a model; 404 for another organization's agent", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [] });
      const res = await startRun(agentId, { input: 'hi' }).expect(409);
      expect(res.body.code).toBe('model_not_configured');
      const other = await createOrg(t, []);
      await t.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as('agent', other))
        .send({ input: 'hi' })
        .expect(404);
    });

    it('409 version_retired for a retired version, checked before its model (as every switch is checked first); nothing starts', async () => {
      const agentId = await agentWith({ instructions: 'v1 has no model', capabilities: [] });
      const publish = async (draft: object) => {
        await t.http
          .put(`/api/v1/agents/${agentId}/draft`)
          .set(...as('builder'))
          .send(draft)
          .expect(200);
        return (
          await t.http
            .post(`/api/v1/agents/${agentId}/publish`)
            .set(...as('builder'))
            .expect(201)
        ).body.version as number;
      };
      expect(await publish({ instructions: 'v2 has one', capabilities: [], model: modelRef() })).toBe(2);
      expect(await publish({ instructions: 'v3 has one too', capabilities: [], model: modelRef() })).toBe(3);
      for (const version of [1, 2]) {
        await t.http
          .post(`/api/v1/agents/${agentId}/versions/${version}/retire`)
          .set(...as('builder'))
          .expect(200);
      }
      const from = model.requests.length;
      for (const version of [1, 2]) {
        const res = await startRun(agentId, { input: 'hi', version }).expect(409);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body.code).toBe('version_retired');
        expect(res.body.detail).toContain(`Version ${version}`);
      }
      const list = await t.http
        .get(`/api/v1/runs?agentId=${agentId}`)
        .set(...as('viewer'))
        .expect(200);
      expect(list.body.items).toEqual([]);
      expect(since(from)).toHaveLength(0);
    });

    it('400 on bad input, and nothing is created', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      const res = await t.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as('agent'))
        .send({ input: '', version: 0, messages: [{ role: 'system', content: 'x' }], extra: 1 })
        .expect(400);
      expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['extra', 'input', 'messages[0].role', 'version']);
      const list = await t.http
        .get(`/api/v1/runs?agentId=${agentId}`)
        .set(...as('viewer'))
        .expect(200);
      expect(list.body.items).toEqual([]);
    });

    it('answers directly: the system prompt, the key, the settings reach the model; Prefer: wait answers when it finished', async () => {
      const agentId = await agentWith({
        instructions: 'You are the support bot.',
        capabilities: [{ id: 'thinking', config: { effort: 'high' } }],
        model: modelRef({ temperature: 0.2, maxOutputTokens: 300 }),
      });
      const from = model.requests.length;
      const before = await scrapeMetrics(t);
      model.setScript(sequence({ text: 'Hello! How can I help?', usage: { prompt: 42, completion: 7 } }));
      const res = await startRun(agentId, {
        input: 'Hi',
        messages: [
          { role: 'user', content: 'Earlier' },
          { role: 'assistant', content: 'Earlier answer' },
        ],
      }).expect(201);
      expect(res.headers['preference-applied']).toBe('wait=10');
      expect(res.body).toMatchObject({
        agentId,
        version: 1,
        status: 'succeeded',
        input: 'Hi',
        output: 'Hello! How can I help?',
        toolCallIds: [],
        pendingApprovalIds: [],
        usage: { modelCalls: 1, inputTokens: 42, outputTokens: 7, toolCalls: 0 },
      });
      expect(res.body.messages).toEqual([
        { role: 'user', content: 'Earlier' },
        { role: 'assistant', content: 'Earlier answer' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello! How can I help?' },
      ]);
      const [req] = since(from);
      expect(req).toMatchObject({ model: 'scripted-1', stream: true, temperature: 0.2, max_completion_tokens: 300, reasoning_effort: 'high' });
      expect(req.messages[0]).toEqual({ role: 'system', content: 'You are the support bot.' });
      expect(req.messages.slice(1).map((m) => m.content)).toEqual(['Earlier', 'Earlier answer', 'Hi']);
      expect(model.authorizations[from]).toBe('Bearer sk-test-secret-123');

      const audit = await t.http
        .get('/api/v1/audit-events?type=run.succeeded')
        .set(...as('admin'))
        .expect(200);
      expect(audit.body.items[0]).toMatchObject({ target: { type: 'run', id: res.body.id } });
      expect(JSON.stringify(audit.body)).not.toContain('sk-test-secret');
      // Created (running), then succeeded: each counted once.
      const after = await scrapeMetrics(t);
      for (const status of ['running', 'succeeded'])
        expect(metricSample(after, `runs_total{status="${status}"}`) - metricSample(before, `runs_total{status="${status}"}`)).toBe(1);
    });

    it('a run whose messages passed MAX_TRANSCRIPT_CHARS takes no further step: failed / transcript_too_large, the model not called', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      model.setScript(sequence({ toolCalls: [{ id: 'big', name: 'send_message', arguments: '{"to":"bo@example.com"}' }] }, { text: 'never asked' }));
      const res = await startRun(agentId, { input: 'x' }).expect(201);
      expect(res.body.status).toBe('waiting_for_approval');
      // What many large answers add up to, written as the earlier turns of this run.
      const huge = [{ role: 'user', content: 'y'.repeat(MAX_TRANSCRIPT_CHARS) }];
      await t.app.get(DataSource).query(`UPDATE run SET messages = $2::jsonb || messages WHERE id = $1`, [res.body.id, JSON.stringify(huge)]);
      const from = model.requests.length;
      await t.http
        .post(`/api/v1/approvals/${res.body.pendingApprovalIds[0]}/approve`)
        .set(...as('approver'))
        .send({})
        .expect(200);
      const run = await until(res.body.id, ['failed', 'succeeded'], 30_000);
      expect(run).toMatchObject({ status: 'failed', error: { code: 'transcript_too_large' } });
      expect(since(from)).toHaveLength(0);
    });

    it('a step that keeps failing on an error of the platform fails the run (internal_error) after a few tries, not a model call every few seconds for ever', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      model.setScript(sequence({ text: 'An answer the platform cannot write.' }));
      const repo = t.app.get(RunsRepository);
      const save = repo.save.bind(repo);
      // Any error the next try repeats: here, every write of the run's success fails.
      const spy = jest.spyOn(repo, 'save').mockImplementation(async (row, owner, patch, events, audit) => {
        if (patch.status === 'succeeded') throw new Error('simulated: this write fails every time');
        return save(row, owner, patch, events, audit);
      });
      try {
        const from = model.requests.length;
        const res = await startRun(agentId, { input: 'hi' }, 1).expect(201);
        const run = await until(res.body.id, ['failed', 'succeeded'], 30_000);
        expect(run).toMatchObject({
          status: 'failed',
          error: { code: 'internal_error', message: expect.stringContaining(`${MAX_STEP_FAILURES} times in a row`) },
        });
        expect(since(from)).toHaveLength(MAX_STEP_FAILURES);
      } finally {
        spy.mockRestore();
      }
    });

    it('RUN_MAX_CONCURRENT holds for runs created here: past it a new run waits for a free slot, then runs', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      const max = 8; // the app's runs.maxConcurrent
      const from = model.requests.length;
      // The first `max` model calls never answer; any later one does.
      model.setScript((_req, i) => (i < max ? { hang: true } : { text: 'done' }));
      const ids = (await Promise.all(Array.from({ length: max + 4 }, () => startRun(agentId, { input: 'go' }, 0).expect(201)))).map((r) => r.body.id as string);
      await model.received(from + max);
      await new Promise((r) => setTimeout(r, 1000));
      expect(since(from)).toHaveLength(max);
      const worker = t.app.get(RunWorker);
      const stepping = ids.filter((id) => worker.isStepping(id));
      expect(stepping).toHaveLength(max);
      for (const id of stepping)
        await t.http
          .post(`/api/v1/runs/${id}/cancel`)
          .set(...as('agent'))
          .expect(200);
      const rest = await Promise.all(ids.filter((id) => !stepping.includes(id)).map((id) => until(id, ['succeeded', 'failed'])));
      expect(rest.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      model.setScript(sequence({ text: 'unused' }));
    });

    it('Prefer: wait outlasts the idle timeout of the connection: the answer (and the run id) comes after N s, not an empty reply', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      model.setScript(sequence({ hang: true }));
      const server = t.app.getHttpServer() as import('node:http').Server;
      const idle = server.timeout;
      // As if HTTP_IDLE_TIMEOUT_MS were 1 s: the wait below is twice that (60 s against 60 s by default).
      server.setTimeout(1000);
      try {
        const res = await startRun(agentId, { input: 'hi' }, 2).expect(201);
        expect([res.headers['preference-applied'], res.body.status, res.body.id]).toEqual(['wait=2', 'running', expect.any(String)]);
        const from = model.requests.length;
        await t.http
          .post(`/api/v1/runs/${res.body.id}/cancel`)
          .set(...as('agent'))
          .expect(200);
        // Cancelled on the node stepping it: the model call in flight is aborted at once, not left to
        // time out and be retried until the next lease renewal noticed (a model call after the cancel).
        const worker = t.app.get(RunWorker);
        const deadline = Date.now() + 3000;
        while (worker.isStepping(res.body.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(worker.isStepping(res.body.id)).toBe(false);
        expect(model.requests.length).toBe(from);
      } finally {
        server.setTimeout(idle);
        model.setScript(sequence({ text: 'unused' }));
      }
    });

    it('calls a read-only tool, then answers; parallel tool calls of one turn each run, their results in order', async () => {
      const agentId = await agentWith({ instructions: 'Look orders up.', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const from = model.requests.length;
      model.setScript(
        sequence(
          {
            toolCalls: [
              { id: 'call_a', name: 'lookup_order', arguments: '{"query":"A-1"}' },
              { id: 'call_b', name: 'lookup_order', arguments: '{"query":"B-2"}' },
            ],
          },
          { text: 'Both have shipped.' },
        ),
      );
      const res = await startRun(agentId, { input: 'Where are A-1 and B-2?' }).expect(201);
      expect(res.body).toMatchObject({ status: 'succeeded', output: 'Both have shipped.', usage: { modelCalls: 2, toolCalls: 2 } });
      expect(res.body.toolCallIds).toHaveLength(2);
      expect(
        runExecutions
          .filter((e) => e.runId === res.body.id)
          .map((e) => e.args.query)
          .sort(),
      ).toEqual(['A-1', 'B-2']);
      const second = since(from)[1];
      expect(second.tools?.map((x) => x.function.name)).toEqual(['lookup_order', 'send_message']);
      const tools = second.messages.filter((m) => m.role === 'tool');
      expect(tools.map((m) => m.tool_call_id)).toEqual(['call_a', 'call_b']);
      expect(JSON.parse(tools[0].content!)).toEqual({ result: { order: 'A-1', status: 'shipped' } });
      const calls = await t.http
        .get(`/api/v1/tool-calls?runId=${res.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(calls.body.items.map((c: { entryPoint: string; status: string }) => [c.entryPoint, c.status])).toEqual([
        ['run', 'succeeded'],
        ['run', 'succeeded'],
      ]);
    });

    it('two calls of one answer under the same id each run and each get their own answer', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const from = model.requests.length;
      model.setScript(
        sequence(
          {
            toolCalls: [
              { id: 'same', name: 'lookup_order', arguments: '{"query":"D-1"}' },
              { id: 'same', name: 'lookup_order', arguments: '{"query":"D-2"}' },
            ],
          },
          { text: 'Done.' },
        ),
      );
      const res = await startRun(agentId, { input: 'D-1 and D-2?' }).expect(201);
      expect(res.body).toMatchObject({ status: 'succeeded', usage: { toolCalls: 2 } });
      const ran = runExecutions.filter((e) => e.runId === res.body.id).map((e) => e.args.query);
      expect(ran.sort()).toEqual(['D-1', 'D-2']);
      const second = since(from)[1];
      const assistant = second.messages.find((m) => m.role === 'assistant');
      expect(assistant?.tool_calls?.map((c) => c.id)).toEqual(['same', 'same~2']);
      const answers = second.messages.filter((m) => m.role === 'tool');
      expect(answers.map((m) => [m.tool_call_id, JSON.parse(m.content!).result.order])).toEqual([
        ['same', 'D-1'],
        ['same~2', 'D-2'],
      ]);
    });

    it('the tool calls of one answer run a few at a time; an answer with more than the cap fails the run and none of its calls runs', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const calls = (n: number, tag: string) =>
        Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name: 'lookup_order', arguments: JSON.stringify({ query: `slow:${tag}-${i}` }) }));
      slowLookups.max = 0;
      model.setScript(sequence({ toolCalls: calls(MAX_TOOL_CALLS_PER_ANSWER, 'ok') }, { text: 'All found.' }));
      const ok = await startRun(agentId, { input: 'go' }, 30).expect(201);
      expect(ok.body).toMatchObject({ status: 'succeeded', usage: { toolCalls: MAX_TOOL_CALLS_PER_ANSWER } });
      expect(runExecutions.filter((e) => e.runId === ok.body.id)).toHaveLength(MAX_TOOL_CALLS_PER_ANSWER);
      expect(slowLookups.max).toBeGreaterThan(1);
      expect(slowLookups.max).toBeLessThanOrEqual(MAX_PARALLEL_TOOL_CALLS);

      const from = model.requests.length;
      model.setScript(sequence({ toolCalls: calls(MAX_TOOL_CALLS_PER_ANSWER + 1, 'many') }, { text: 'unused' }));
      const many = await startRun(agentId, { input: 'go' }).expect(201);
      expect(many.body).toMatchObject({
        status: 'failed',
        error: { code: 'model_error', message: expect.stringContaining(`more than ${MAX_TOOL_CALLS_PER_ANSWER} tool calls`) },
        toolCallIds: [],
      });
      // Not retried: the same provider would answer the same.
      expect(since(from)).toHaveLength(1);
      expect(runExecutions.filter((e) => e.runId === many.body.id)).toEqual([]);
    });

    it("a step's events are written however many there are (one statement takes at most 65,535 parameters)", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      const repo = t.app.get(RunsRepository);
      const id = randomUUID();
      // Leased by a node that does not exist: this process's worker leaves it alone.
      await repo.insert(
        { id, orgId: org.id, agentId, version: 1, profile: null, workerType: null, input: 'x', messages: [], requestedBy: org.keyIds.agent },
        'node-test',
        60_000,
        [],
        [],
      );
      const events = Array.from({ length: 40_000 }, (_, i) => ({ type: 'tool_call.failed', data: { i } }));
      expect(await repo.save({ id, org_id: org.id }, 'node-test', { status: 'failed', release: true }, events)).toBe(true);
      const [{ n, first, last }] = await t.app
        .get(DataSource)
        .query(`SELECT count(*)::int AS n, min((data->>'i')::int) AS first, max((data->>'i')::int) AS last FROM run_event WHERE run_id = $1`, [id]);
      expect([n, first, last]).toEqual([40_000, 0, 39_999]);
    });

    it('an unknown tool, arguments that are not JSON or break the schema: messages the model sees, and the run goes on', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const from = model.requests.length;
      // Answered by what the request holds, not by its index: a first request the busy machine took
      // past the test's model timeout is retried, and must get the tool calls again.
      const answered = (req: ChatRequest) => req.messages.some((m) => m.role === 'tool');
      model.setScript((req) =>
        answered(req)
          ? // And in the model's own text: stored with U+FFFD, as what tools return is.
            { text: 'Sorry.\u0000' }
          : {
              toolCalls: [
                { id: 'c1', name: 'no_such_tool', arguments: '{}' },
                { id: 'c2', name: 'lookup_order', arguments: '{"query": ' },
                { id: 'c3', name: 'lookup_order', arguments: '{"query": 5}' },
                // What no column can hold (REST refuses it at parse; a model's arguments are not a body).
                { id: 'c4', name: 'lookup_order', arguments: '{"query": "A-1\\u0000"}' },
                { id: 'c5', name: 'lookup_order', arguments: '{"query": "A-1", "page": 1e999}' },
                // Nested past a body's depth: validating it ran out of stack and the step failed (internal_error).
                { id: 'c6', name: 'lookup_order', arguments: `{"query":${'['.repeat(5000)}${']'.repeat(5000)}}` },
                // Naming more members than a body may: their parse held the event loop (row 145).
                {
                  id: 'c7',
                  name: 'lookup_order',
                  arguments: JSON.stringify({ query: 'A-1', x: Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`n${i}`, 0])) }),
                },
                // Numbers stored far longer than written, as a body's are refused (row 134): 3,300 of 5e-324, 1.07 MB more.
                { id: 'c8', name: 'lookup_order', arguments: `{"query":"A-1","x":[${Array(3_300).fill('5e-324').join(',')}]}` },
              ],
            },
      );
      const started = await startRun(agentId, { input: 'go' }).expect(201);
      // Validating these arguments is most of a second's work, many more on a machine shared with other suites.
      const run = await until(started.body.id, ['succeeded', 'failed'], 60_000);
      // The error, if any, in the failure's message.
      expect({ status: run.status, output: run.output, error: run.error }).toEqual({ status: 'succeeded', output: 'Sorry.\ufffd', error: undefined });
      const results = since(from)
        .find(answered)!
        .messages.filter((m) => m.role === 'tool')
        .map((m) => JSON.parse(m.content!).error)
        .map((e: { code: string; errors?: { path: string; code: string }[] }) => [e.code, e.errors?.[0]?.path, e.errors?.[0]?.code]);
      expect(results).toEqual([
        ['unknown_tool', undefined, undefined],
        ['invalid_arguments', undefined, undefined],
        ['invalid_arguments', 'arguments.query', expect.any(String)],
        ['invalid_arguments', 'arguments.query', 'nul_character'],
        ['invalid_arguments', 'arguments.page', 'number_out_of_range'],
        ['invalid_arguments', undefined, undefined],
        ['invalid_arguments', undefined, undefined],
        ['invalid_arguments', expect.stringMatching(/^arguments\.x\[\d+\]$/), 'numbers_too_long'],
      ]);
      const [deep, named, long] = since(from)
        .find(answered)!
        .messages.filter((m) => m.role === 'tool')
        .slice(-3)
        .map((m) => JSON.parse(m.content!).error.message);
      expect([deep, named, long]).toEqual([
        'The arguments nest deeper than 64 levels; nothing ran.',
        'The arguments name more than 10000 distinct members (object keys); nothing ran.',
        'The arguments hold a number no column stores as written; nothing ran.',
      ]);
      expect(runExecutions.filter((e) => e.runId === run.id)).toEqual([]);
    });

    it('waits for approval, resumes by itself when approved, and the model sees the result', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const from = model.requests.length;
      model.setScript(
        sequence({ toolCalls: [{ id: 'send1', name: 'send_message', arguments: '{"to":"ann@example.com","body":"Shipped"}' }] }, { text: 'Sent.' }),
      );
      const res = await startRun(agentId, { input: 'Tell Ann' }).expect(201);
      expect(res.body).toMatchObject({ status: 'waiting_for_approval', pendingApprovalIds: [expect.any(String)] });
      expect(runExecutions.filter((e) => e.runId === res.body.id)).toEqual([]);
      // The key that started the run may not approve its calls.
      await t.http
        .post(`/api/v1/approvals/${res.body.pendingApprovalIds[0]}/approve`)
        .set(...as('agent'))
        .send({})
        .expect(403);
      await t.http
        .post(`/api/v1/approvals/${res.body.pendingApprovalIds[0]}/approve`)
        .set(...as('approver'))
        .send({})
        .expect(200);
      const done = await until(res.body.id, ['succeeded', 'failed']);
      expect(done).toMatchObject({ status: 'succeeded', output: 'Sent.', pendingApprovalIds: [] });
      expect(runExecutions.filter((e) => e.runId === res.body.id)).toHaveLength(1);
      const tool = since(from)[1].messages.find((m) => m.role === 'tool')!;
      expect(JSON.parse(tool.content!)).toEqual({ result: { sent: true, to: 'ann@example.com' } });
    });

    it('a rejection reaches the model with its reason; an expiry too', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"bo@example.com"}' }] }, { text: 'Understood.' }));
      let from = model.requests.length;
      const rejected = await startRun(agentId, { input: 'Tell Bo' }).expect(201);
      await t.http
        .post(`/api/v1/approvals/${rejected.body.pendingApprovalIds[0]}/reject`)
        .set(...as('approver'))
        .send({ reason: 'Not to Bo' })
        .expect(200);
      expect(await until(rejected.body.id, ['succeeded', 'failed'])).toMatchObject({ status: 'succeeded' });
      const rejection = JSON.parse(since(from)[1].messages.find((m) => m.role === 'tool')!.content!);
      expect(rejection).toEqual({ error: { code: 'approval_rejected', message: 'Not to Bo' } });

      from = model.requests.length;
      model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"bo@example.com"}' }] }, { text: 'Understood.' }));
      const expiring = await startRun(agentId, { input: 'Tell Bo again' }).expect(201);
      expect(expiring.body.status).toBe('waiting_for_approval');
      await t.app.get(DataSource).query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring.body.pendingApprovalIds[0]]);
      await t.app
        .get(DataSource)
        .query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE approval_id = $1`, [expiring.body.pendingApprovalIds[0]]);
      // The run's gate is its approval's expiry (test/runs-waiting.e2e-spec.ts): moved with it.
      await t.app.get(DataSource).query(`UPDATE run SET not_before = now() - interval '1 second' WHERE id = $1`, [expiring.body.id]);
      expect(await until(expiring.body.id, ['succeeded', 'failed'])).toMatchObject({ status: 'succeeded' });
      const expiry = JSON.parse(since(from)[1].messages.find((m) => m.role === 'tool')!.content!);
      expect(expiry.error.code).toBe('approval_expired');
    });

    it('the budget capability limits tool calls per run: the model reads budget_exceeded', async () => {
      const agentId = await agentWith({
        instructions: 'x',
        capabilities: [{ id: 'fx-run-tools' }, { id: 'budget', config: { maxToolCallsPerRun: 1 } }],
        model: modelRef(),
      });
      const from = model.requests.length;
      model.setScript(
        sequence(
          { toolCalls: [{ id: 'a', name: 'lookup_order', arguments: '{"query":"1"}' }] },
          { toolCalls: [{ id: 'b', name: 'lookup_order', arguments: '{"query":"2"}' }] },
          { text: 'Out of budget.' },
        ),
      );
      const res = await startRun(agentId, { input: 'x' }).expect(201);
      expect(res.body).toMatchObject({ status: 'succeeded', output: 'Out of budget.' });
      expect(runExecutions.filter((e) => e.runId === res.body.id)).toHaveLength(1);
      const refused = JSON.parse(since(from)[2].messages.filter((m) => m.role === 'tool')[1].content!);
      expect(refused.error.code).toBe('budget_exceeded');
    });

    it('retries 429 and 5xx with backoff; fails with model_error when the provider keeps failing; garbage is retried too', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      let from = model.requests.length;
      model.setScript(sequence({ status: 429, headers: { 'retry-after-ms': '20' } }, { status: 503 }, { text: 'Made it.' }));
      const ok = await startRun(agentId, { input: 'x' }).expect(201);
      expect(ok.body).toMatchObject({ status: 'succeeded', output: 'Made it.' });
      expect(since(from)).toHaveLength(3);

      from = model.requests.length;
      model.setScript(sequence({ garbage: '{not json' }, { text: 'Recovered.' }));
      const garbage = await startRun(agentId, { input: 'x' }).expect(201);
      expect(garbage.body).toMatchObject({ status: 'succeeded', output: 'Recovered.' });
      expect(since(from)).toHaveLength(2); // the garbage answer, then the retry

      from = model.requests.length;
      model.setScript(sequence({ status: 500 }));
      const failed = await startRun(agentId, { input: 'x' }).expect(201);
      expect(failed.body).toMatchObject({ status: 'failed', error: { code: 'model_error', message: expect.stringContaining('500') } });
      expect(since(from)).toHaveLength(3); // the first try and RUN_MODEL_RETRIES = 2

      from = model.requests.length;
      model.setScript(sequence({ status: 401, body: { error: { message: 'bad key' } } }));
      const unauthorized = await startRun(agentId, { input: 'x' }).expect(201);
      expect(unauthorized.body).toMatchObject({ status: 'failed', error: { code: 'model_error' } });
      expect(since(from)).toHaveLength(1);
    });

    it("a provider that echoes its API key in an error: the run's error and events show it redacted, to every reader", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      const spellings = ['Incorrect API key provided: sk-test-secret-123.', 'bad request from Bearer sk-test-secret-123'];
      // Case-normalised, and base64 (of the header a provider decoded and shows again).
      spellings.push('invalid key SK-TEST-SECRET-123', `got ${Buffer.from('Bearer sk-test-secret-123').toString('base64')}`);
      for (const message of spellings) {
        model.setScript(sequence({ status: 401, body: { error: { message } } }));
        const run = await startRun(agentId, { input: 'x' }).expect(201);
        expect(run.body).toMatchObject({ status: 'failed', error: { code: 'model_error', message: expect.stringContaining('[redacted]') } });
        const read = await t.http
          .get(`/api/v1/runs/${run.body.id}`)
          .set(...as('viewer'))
          .expect(200);
        const events = await readEvents(run.body.id);
        expect(events.map((e) => e.event)).toContain('run.failed');
        const encoded = Buffer.from('Bearer sk-test-secret-123').toString('base64');
        const leaked = (text: string) => text.toLowerCase().includes('sk-test-secret-123') || text.includes(encoded.slice(8, -4));
        for (const seen of [run.body, read.body, events]) expect(leaked(JSON.stringify(seen))).toBe(false);
        const [row] = await t.app.get(DataSource).query(`SELECT error_message FROM run WHERE id = $1`, [run.body.id]);
        expect(leaked(row.error_message)).toBe(false);
      }
    });

    it('drops reasoning_effort for a model that refuses it', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'thinking' }], model: modelRef({ name: 'no-reasoning' }) });
      const from = model.requests.length;
      model.setScript((req) =>
        req.reasoning_effort
          ? { status: 400, body: { error: { message: 'Unrecognized request argument supplied: reasoning_effort', param: 'reasoning_effort' } } }
          : { text: 'fine' },
      );
      const res = await startRun(agentId, { input: 'x' }).expect(201);
      expect(res.body).toMatchObject({ status: 'succeeded', output: 'fine' });
      expect(since(from).map((r) => r.reasoning_effort)).toEqual(['medium', undefined]);
    });

    it('RUN_MAX_STEPS: a model that never stops calling tools fails with max_steps', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      model.setScript((_req, i) => ({ toolCalls: [{ id: `loop${i}`, name: 'lookup_order', arguments: `{"query":"${i}"}` }] }));
      const res = await startRun(agentId, { input: 'x' }).expect(201);
      expect(res.body).toMatchObject({ status: 'failed', error: { code: 'max_steps' }, usage: { modelCalls: 6, toolCalls: 6 } });
    });

    it('compaction: clear_tool_results, truncate_oldest and summarize keep the conversation under the window', async () => {
      // About 400 tokens of varied words (a repeated letter would compress into a few tokens).
      const big = Array.from({ length: 130 }, (_, i) => `item${i * 7}`).join(' ');
      const script = () =>
        sequence(
          { toolCalls: [{ id: 'l1', name: 'lookup_order', arguments: JSON.stringify({ query: big }) }] },
          { toolCalls: [{ id: 'l2', name: 'lookup_order', arguments: JSON.stringify({ query: big }) }] },
          { toolCalls: [{ id: 'l3', name: 'lookup_order', arguments: '{"query":"small"}' }] },
          { text: 'Done.' },
        );
      const draft = (config: object) => ({
        instructions: 'x',
        capabilities: [{ id: 'fx-run-tools' }, { id: 'compaction', config }],
        model: modelRef({ contextWindow: 1200, maxOutputTokens: 100 }),
      });

      const clearing = await agentWith(draft({ strategy: 'clear_tool_results', keepLastTurns: 1 }));
      let from = model.requests.length;
      model.setScript(script());
      const cleared = await startRun(clearing, { input: 'go' }).expect(201);
      expect(cleared.body.status).toBe('succeeded');
      const last = since(from).pop()!;
      expect(last.messages.filter((m) => m.role === 'tool').map((m) => m.content?.startsWith('[This tool result was removed'))).toEqual([true, true, false]);
      // The transcript itself keeps every result.
      expect(cleared.body.messages.filter((m: { role: string }) => m.role === 'tool').every((m: { content: string }) => m.content.includes('shipped'))).toBe(
        true,
      );

      const truncating = await agentWith(draft({ strategy: 'truncate_oldest', keepLastTurns: 2 }));
      from = model.requests.length;
      model.setScript(script());
      const truncated = await startRun(truncating, { input: 'go' }).expect(201);
      expect(truncated.body.status).toBe('succeeded');
      const lastTruncated = since(from).pop()!;
      expect(lastTruncated.messages.some((m) => m.role === 'user' && m.content === 'go')).toBe(false);

      const summarizing = await agentWith(draft({ strategy: 'summarize', keepLastTurns: 1, summaryPrompt: 'Summarize tersely.' }));
      from = model.requests.length;
      const steps = script();
      let answered = 0;
      model.setScript((req) => (req.messages[0]?.content === 'Summarize tersely.' ? { text: 'The user asked about orders.' } : steps(req, answered++)));
      const summarized = await startRun(summarizing, { input: 'go' }).expect(201);
      expect(summarized.body.status).toBe('succeeded');
      const requests = since(from);
      expect(requests.some((r) => r.messages[0]?.content === 'Summarize tersely.' && !r.tools)).toBe(true);
      expect(requests.pop()!.messages[1]).toEqual({ role: 'user', content: 'A summary of the earlier conversation:\n\nThe user asked about orders.' });
    });

    it('cancel: a waiting run becomes cancelled, takes no further step, and its pending approvals are rejected naming the run', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      // Two side effects in one answer: two approvals wait when the run is cancelled.
      model.setScript(
        sequence(
          {
            toolCalls: [
              { id: 's1', name: 'send_message', arguments: '{"to":"cy@example.com","body":"one"}' },
              { id: 's2', name: 'send_message', arguments: '{"to":"cy@example.com","body":"two"}' },
            ],
          },
          { text: 'never' },
        ),
      );
      const res = await startRun(agentId, { input: 'x' }).expect(201);
      expect(res.body.status).toBe('waiting_for_approval');
      const approvalIds: string[] = res.body.pendingApprovalIds;
      expect(approvalIds).toHaveLength(2);
      await t.http
        .post(`/api/v1/runs/${res.body.id}/cancel`)
        .set(...as('viewer'))
        .expect(403);
      const executedBefore = runExecutions.length;
      const from = model.requests.length;
      const cancelled = await t.http
        .post(`/api/v1/runs/${res.body.id}/cancel`)
        .set(...as('agent'))
        .expect(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', completedAt: expect.any(String), pendingApprovalIds: [] });

      const reason = `The run ${res.body.id} was cancelled; the call was not run.`;
      for (const id of approvalIds) {
        const approval = await t.http
          .get(`/api/v1/approvals/${id}`)
          .set(...as('approver'))
          .expect(200);
        expect(approval.body).toMatchObject({ status: 'rejected', note: reason, decidedBy: org.keyIds.agent, decidedAt: expect.any(String) });
        const call = await t.http
          .get(`/api/v1/tool-calls/${approval.body.toolCallId}`)
          .set(...as('viewer'))
          .expect(200);
        expect(call.body).toMatchObject({ status: 'rejected', error: { code: 'approval_rejected', message: reason } });
        // Decided: a person's later decision is refused, and nothing runs.
        const late = await t.http
          .post(`/api/v1/approvals/${id}/approve`)
          .set(...as('approver'))
          .send({})
          .expect(409);
        expect(late.body.code).toBe('approval_already_decided');
        await t.http
          .post(`/api/v1/approvals/${id}/reject`)
          .set(...as('approver'))
          .send({ reason: 'too late' })
          .expect(409);
      }
      expect(runExecutions.length).toBe(executedBefore);

      // Audited as rejections by the key that cancelled, each naming the run.
      const audit = await t.http
        .get('/api/v1/audit-events?type=approval.rejected&limit=50')
        .set(...as('admin'))
        .expect(200);
      const rejections = audit.body.items.filter((e: { target: { id: string } }) => approvalIds.includes(e.target.id));
      expect(rejections).toHaveLength(2);
      for (const e of rejections) {
        expect(e).toMatchObject({ actor: { type: 'api_key', id: org.keyIds.agent }, data: { runId: res.body.id, reason, cause: 'run_cancelled' } });
      }

      await new Promise((r) => setTimeout(r, 300));
      expect(since(from)).toHaveLength(0);
      expect(
        (
          await t.http
            .get(`/api/v1/runs/${res.body.id}`)
            .set(...as('viewer'))
            .expect(200)
        ).body.status,
      ).toBe('cancelled');
      // Cancelling a finished run answers it as it is, and decides nothing again.
      await t.http
        .post(`/api/v1/runs/${res.body.id}/cancel`)
        .set(...as('agent'))
        .expect(200);
      const again = await t.http
        .get('/api/v1/audit-events?type=approval.rejected&limit=50')
        .set(...as('admin'))
        .expect(200);
      expect(again.body.items.filter((e: { target: { id: string } }) => approvalIds.includes(e.target.id))).toHaveLength(2);
    });

    it("cancel settles only the run's own calls: another agent's call, or a client's REST call, tagged with the run's id stays pending", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const otherAgent = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }] });
      model.setScript(sequence({ toolCalls: [{ id: 's1', name: 'send_message', arguments: '{"to":"ed@example.com","body":"own"}' }] }, { text: 'never' }));
      const run = await startRun(agentId, { input: 'x' }).expect(201);
      expect(run.body.status).toBe('waiting_for_approval');
      // runId is free text on a REST call: anyone's call may carry this run's id.
      const tagged: string[] = [];
      for (const [agent, body] of [
        [otherAgent, 'another agent'],
        [agentId, 'the same agent, over REST'],
      ]) {
        const call = await t.http
          .post(`/api/v1/agents/${agent}/tool-calls`)
          .set(...as('agent'))
          .send({ tool: 'send_message', arguments: { to: 'fi@example.com', body }, runId: run.body.id })
          .expect(202);
        tagged.push(call.body.approvalId);
      }
      await t.http
        .post(`/api/v1/runs/${run.body.id}/cancel`)
        .set(...as('agent'))
        .expect(200);
      const own = await t.http
        .get(`/api/v1/approvals/${run.body.pendingApprovalIds[0]}`)
        .set(...as('approver'))
        .expect(200);
      expect(own.body.status).toBe('rejected');
      for (const id of tagged) {
        const approval = await t.http
          .get(`/api/v1/approvals/${id}`)
          .set(...as('approver'))
          .expect(200);
        expect(approval.body).toMatchObject({ status: 'pending' });
        expect(approval.body.decidedBy).toBeUndefined();
        // Still a person's to decide.
        await t.http
          .post(`/api/v1/approvals/${id}/reject`)
          .set(...as('approver'))
          .send({ reason: 'not now' })
          .expect(200);
      }
    });

    it("revoking the key that started a run fails the run and rejects its pending approvals at once; the key's own REST call stays a person's to decide", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const key = await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as('admin'))
        .send({ name: 'runtime to revoke', roles: ['agent'] })
        .expect(201);
      model.setScript(
        sequence({ toolCalls: [{ id: 'r1', name: 'send_message', arguments: '{"to":"gu@example.com","body":"for a dead run"}' }] }, { text: 'never' }),
      );
      const run = await t.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...bearer(key.body.token))
        .set('Prefer', 'wait=10')
        .send({ input: 'x' })
        .expect(201);
      expect(run.body.status).toBe('waiting_for_approval');
      const [approvalId] = run.body.pendingApprovalIds as string[];
      const rest = await t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...bearer(key.body.token))
        .send({ tool: 'send_message', arguments: { to: 'gu@example.com', body: 'asked over REST' } })
        .expect(202);
      const executedBefore = runExecutions.length;
      const from = model.requests.length;
      const metricsBefore = await scrapeMetrics(t);

      await t.http
        .delete(`/api/v1/orgs/${org.id}/api-keys/${key.body.id}`)
        .set(...as('admin'))
        .expect(204);
      // Counted once, when the revocation committed.
      const failedRuns = (text: string) => metricSample(text, 'runs_total{status="failed"}');
      expect(failedRuns(await scrapeMetrics(t)) - failedRuns(metricsBefore)).toBe(1);

      const failed = await t.http
        .get(`/api/v1/runs/${run.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(failed.body).toMatchObject({
        status: 'failed',
        error: { code: 'unauthorized', message: 'The API key that started the run was revoked.' },
        pendingApprovalIds: [],
        completedAt: expect.any(String),
      });
      const reason = `The API key that started the run ${run.body.id} was revoked; the run failed and the call was not run.`;
      const approval = await t.http
        .get(`/api/v1/approvals/${approvalId}`)
        .set(...as('approver'))
        .expect(200);
      expect(approval.body).toMatchObject({ status: 'rejected', note: reason, decidedAt: expect.any(String) });
      expect(approval.body.decidedBy).toBeUndefined();
      const late = await t.http
        .post(`/api/v1/approvals/${approvalId}/approve`)
        .set(...as('approver'))
        .send({})
        .expect(409);
      expect(late.body.code).toBe('approval_already_decided');
      expect(runExecutions.length).toBe(executedBefore);

      const audit = await t.http
        .get('/api/v1/audit-events?limit=20')
        .set(...as('admin'))
        .expect(200);
      const adminActor = { type: 'api_key', id: org.keyIds.admin };
      expect(audit.body.items.find((e: { type: string; target: { id: string } }) => e.type === 'run.failed' && e.target.id === run.body.id)).toMatchObject({
        actor: adminActor,
        data: { error: { code: 'unauthorized' }, cause: 'api_key_revoked', apiKeyId: key.body.id },
      });
      expect(
        audit.body.items.find((e: { type: string; target: { id: string } }) => e.type === 'approval.rejected' && e.target.id === approvalId),
      ).toMatchObject({
        actor: adminActor,
        data: { runId: run.body.id, reason, cause: 'api_key_revoked', apiKeyId: key.body.id },
      });
      expect((await readEvents(run.body.id)).map((e) => e.event).slice(-2)).toEqual(['run.waiting', 'run.failed']);

      // A call the key asked for itself is not a run's: an approver may still want it done.
      const restApproval = await t.http
        .get(`/api/v1/approvals/${rest.body.approvalId}`)
        .set(...as('approver'))
        .expect(200);
      expect(restApproval.body.status).toBe('pending');
      await t.http
        .post(`/api/v1/approvals/${rest.body.approvalId}/approve`)
        .set(...as('approver'))
        .send({})
        .expect(200);
      await new Promise((r) => setTimeout(r, 300));
      expect(since(from)).toHaveLength(0);
    });

    it.each([
      { end: 'revoked', how: 'its key revoked' },
      { end: 'cancelled', how: 'cancelled' },
    ] as const)('a tool call still running when the run ends ($how) is counted in the run once it settles: toolCallIds and usage', async ({ end }) => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      const key = await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as('admin'))
        .send({ name: `runtime ${end} mid-call`, roles: ['agent'] })
        .expect(201);
      const query = `held-${end}-${randomUUID()}`;
      const release = holdLookup(query);
      model.setScript(sequence({ toolCalls: [{ id: 'h1', name: 'lookup_order', arguments: JSON.stringify({ query }) }] }, { text: 'never' }));
      const run = await t.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...bearer(key.body.token))
        .send({ input: 'x' })
        .expect(201);
      try {
        for (const deadline = Date.now() + 10_000; !runExecutions.some((e) => e.args.query === query);) {
          if (Date.now() > deadline) throw new Error('the tool never started');
          await new Promise((r) => setTimeout(r, 20));
        }
        if (end === 'revoked') {
          await t.http
            .delete(`/api/v1/orgs/${org.id}/api-keys/${key.body.id}`)
            .set(...as('admin'))
            .expect(204);
        } else {
          await t.http
            .post(`/api/v1/runs/${run.body.id}/cancel`)
            .set(...bearer(key.body.token))
            .expect(200);
        }
        const ended = await until(run.body.id, ['failed', 'cancelled']);
        expect(ended).toMatchObject({ status: end === 'revoked' ? 'failed' : 'cancelled', toolCallIds: [] });
      } finally {
        release();
      }
      // The step that ran the tool finishes now, after the run ended: its call ran under the run's id.
      await t.app.get(RunWorker).idle();
      const calls = await t.http
        .get(`/api/v1/tool-calls?runId=${run.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(calls.body.items.map((c: { status: string; tool: string }) => [c.tool, c.status])).toEqual([['lookup_order', 'succeeded']]);
      const after = await t.http
        .get(`/api/v1/runs/${run.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(after.body).toMatchObject({
        status: end === 'revoked' ? 'failed' : 'cancelled',
        toolCallIds: [calls.body.items[0].id],
        usage: { modelCalls: 1, toolCalls: 1 },
      });
      if (end === 'revoked') expect(after.body.error.code).toBe('unauthorized');
      // Nothing else happened to the ended run: no model call after it ended.
      expect((await readEvents(run.body.id)).map((e) => e.event).slice(-1)).toEqual([end === 'revoked' ? 'run.failed' : 'run.cancelled']);
    });

    it("an open event stream and a Prefer: wait poll the run's status, not its whole row (its transcript) twice a second", async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      model.setScript(sequence({ hang: true }));
      const repo = t.app.get(RunsRepository);
      const find = jest.spyOn(repo, 'find');
      const view = jest.spyOn(repo, 'viewText');
      try {
        const res = await startRun(agentId, { input: 'x' }, 2).expect(201);
        expect(res.body.status).toBe('running');
        // The answer: one read of the row (its JSON, made by the database: attack round 13, K-F6), whatever the wait.
        expect([...find.mock.calls, ...view.mock.calls].filter(([, id]) => id === res.body.id)).toHaveLength(1);
        find.mockClear();
        const address = t.app.getHttpServer().address();
        const port = typeof address === 'object' && address ? address.port : 0;
        const stream = await SseClient.open(`http://127.0.0.1:${port}/api/v1/runs/${res.body.id}/events`, { Authorization: `Bearer ${org.keys.viewer}` });
        try {
          await stream.waitFor((c) => c.messages.some((m) => m.data?.includes('agentId')));
          await new Promise((r) => setTimeout(r, 2000));
          // Opening it checks the run exists; polling reads no row.
          expect(find.mock.calls.filter(([, id]) => id === res.body.id).length).toBeLessThanOrEqual(1);
        } finally {
          stream.close();
        }
        await t.http
          .post(`/api/v1/runs/${res.body.id}/cancel`)
          .set(...as('agent'))
          .expect(200);
      } finally {
        find.mockRestore();
        view.mockRestore();
        model.setScript(sequence({ text: 'unused' }));
      }
    });

    it('events: every event from the start over SSE, resumable with Last-Event-ID', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"di@example.com"}' }] }, { text: 'Sent.' }));
      const run = await startRun(agentId, { input: 'x' }).expect(201);
      const collected = readEvents(run.body.id);
      await t.http
        .post(`/api/v1/approvals/${run.body.pendingApprovalIds[0]}/approve`)
        .set(...as('approver'))
        .send({})
        .expect(200);
      const events = await collected;
      expect(events.map((e) => e.event)).toEqual([
        'run.started',
        'model.completed',
        'tool_call.requested',
        'approval.requested',
        'run.waiting',
        'run.resumed',
        'tool_call.succeeded',
        'model.completed',
        'run.succeeded',
      ]);
      // Sealed under the run's key: in the clear they were a sequence every run of every organization shares.
      expect(events.every((e) => /^[A-Za-z0-9_-]{32}$/.test(e.id))).toBe(true);
      const seal = t.app.get(PositionSeals).run(org.id, run.body.id);
      const ids = events.map((e) => seal.open(e.id)![0]);
      expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
      const resumed = await readEvents(run.body.id, events[4].id);
      expect(resumed.map((e) => e.event)).toEqual(['run.resumed', 'tool_call.succeeded', 'model.completed', 'run.succeeded']);
      await t.http
        .get(`/api/v1/runs/${run.body.id}/events`)
        .set(...as('viewer'))
        .set('Last-Event-ID', 'abc')
        .expect(400);
      // The plain sequence, as ids were before they were sealed, and another run's id: neither is this stream's.
      for (const bad of [ids[4].toString(), seal.seal(ids[4], 1n), t.app.get(PositionSeals).run(org.id, randomUUID()).seal(ids[4], 0n)]) {
        await t.http
          .get(`/api/v1/runs/${run.body.id}/events`)
          .set(...as('viewer'))
          .set('Last-Event-ID', bad)
          .expect(400);
      }
      const other = await createOrg(t, []);
      await t.http
        .get(`/api/v1/runs/${run.body.id}/events`)
        .set(...as('viewer', other))
        .expect(404);
    });

    it('events are read about EVENT_BATCH_BYTES at a time (at least one), and a stream still sends every one, in order', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: modelRef() });
      model.setScript(sequence({ text: 'done' }));
      const run = await startRun(agentId, { input: 'x' }, 5).expect(201);
      const big = 'b'.repeat(600 * 1024);
      const ds = t.app.get(DataSource);
      for (let i = 0; i < 6; i++) {
        await ds.query(`INSERT INTO run_event (org_id, run_id, type, data) VALUES ($1, $2, 'model.completed', $3::jsonb)`, [
          org.id,
          run.body.id,
          JSON.stringify({ step: 100 + i, content: i === 3 ? 'b'.repeat(3 * 1024 * 1024) : big }),
        ]);
      }
      const repo = t.app.get(RunsRepository);
      const batches: number[][] = [];
      for (let last = '0'; ;) {
        const { events: batch } = await repo.events(org.id, run.body.id, last);
        if (batch.length === 0) break;
        batches.push(batch.map((e) => Buffer.byteLength(JSON.stringify(e.data))));
        last = batch[batch.length - 1].seq;
      }
      // Each batch stops at the event that passes the budget.
      for (const sizes of batches) expect(sizes.slice(0, -1).reduce((a, b) => a + b, 0)).toBeLessThan(EVENT_BATCH_BYTES);
      expect(batches.length).toBeGreaterThanOrEqual(3);
      const steps = (await readEvents(run.body.id)).filter((e) => e.event === 'model.completed').map((e) => e.data.step);
      expect(steps.slice(-6)).toEqual([100, 101, 102, 103, 104, 105]);
    });

    it('profiles and worker types: tools, manifest and runs offer only what applies', async () => {
      const agentId = await agentWith({ instructions: 'Team.', capabilities: [{ id: 'fx-run-research' }, { id: 'fx-run-writer' }], model: modelRef() });
      const names = async (q: string) =>
        (
          await t.http
            .get(`/api/v1/agents/${agentId}/versions/latest/tools${q}`)
            .set(...as('agent'))
            .expect(200)
        ).body.items.map((x: { name: string }) => x.name);
      expect(await names('')).toEqual(['research', 'draft_text']);
      expect(await names('?workerType=researcher')).toEqual(['research']);
      expect(await names('?workerType=writer')).toEqual(['draft_text']);
      expect(await names('?profile=shallow')).toEqual(['draft_text']);
      const manifest = await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest?workerType=writer`)
        .set(...as('agent'))
        .expect(200);
      expect(manifest.body.systemPrompt).toBe('Team.\n\nWrite clearly.');
      await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest?workerType=`)
        .set(...as('agent'))
        .expect(400);

      const from = model.requests.length;
      model.setScript(sequence({ toolCalls: [{ id: 'r', name: 'research', arguments: '{"query":"q"}' }] }, { text: 'ok' }));
      const run = await startRun(agentId, { input: 'x', workerType: 'writer' }).expect(201);
      expect(run.body).toMatchObject({ status: 'succeeded', workerType: 'writer' });
      expect(since(from)[0].tools?.map((x) => x.function.name)).toEqual(['draft_text']);
      // A tool of another worker is refused by the executor: the writer never researches.
      expect(JSON.parse(since(from)[1].messages.find((m) => m.role === 'tool')!.content!).error.code).toBe('unknown_tool');
      expect(runExecutions.filter((e) => e.runId === run.body.id)).toEqual([]);
    });

    it('lists runs by agent and status; another organization sees none', async () => {
      const agentId = await agentWith({ instructions: 'x', capabilities: [], model: modelRef() });
      model.setScript(sequence({ text: 'one' }));
      const a = await startRun(agentId, { input: '1' }).expect(201);
      const b = await startRun(agentId, { input: '2' }).expect(201);
      const page = await t.http
        .get(`/api/v1/runs?agentId=${agentId}&status=succeeded&limit=1`)
        .set(...as('agent'))
        .expect(200);
      expect(page.body.items.map((r: { id: string }) => r.id)).toEqual([b.body.id]);
      const next = await t.http
        .get(`/api/v1/runs?agentId=${agentId}&status=succeeded&limit=1&cursor=${page.body.nextCursor}`)
        .set(...as('agent'))
        .expect(200);
      expect(next.body.items.map((r: { id: string }) => r.id)).toEqual([a.body.id]);
      await t.http
        .get('/api/v1/runs?status=nope')
        .set(...as('agent'))
        .expect(400);
      const other = await createOrg(t, []);
      await t.http
        .get(`/api/v1/runs/${a.body.id}`)
        .set(...as('viewer', other))
        .expect(404);
      await t.app.get(RunWorker).idle();
    });
  });

  /** Reads a run's event stream to its end. */
  function readEvents(runId: string, lastEventId?: string): Promise<{ id: string; event: string; data: Record<string, unknown> }[]> {
    const address = t.app.getHttpServer().address();
    const port = typeof address === 'object' && address ? address.port : 0;
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { Authorization: `Bearer ${org.keys.viewer}` };
      if (lastEventId) headers['Last-Event-ID'] = lastEventId;
      const req = http.get({ host: '127.0.0.1', port, path: `/api/v1/runs/${runId}/events`, headers }, (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toContain('text/event-stream');
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          const events = text
            .split('\n\n')
            .filter((block) => block.includes('event: '))
            .map((block) => {
              const field = (name: string) =>
                block
                  .split('\n')
                  .find((l) => l.startsWith(`${name}: `))!
                  .slice(name.length + 2);
              return { id: field('id'), event: field('event'), data: JSON.parse(field('data')) };
            });
          resolve(events);
        });
      });
      req.on('error', reject);
    });
  }
});
