import { DataSource } from 'typeorm';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Attack round 22, AF-N1: every call of a run's model the guards refuse is audited, and a model
 * answering each step with 128 calls of tools the version does not offer made one run write 4,096
 * `tool_call.denied` events by one request, outside every rate limit. A run now fails with
 * `too_many_refused_calls` once RUN_MAX_REFUSED_CALLS of its calls were refused; the calls past it
 * are answered refused to the model without being asked for, and no further step is taken.
 */
describe("a run's refused calls (e2e, attack round 22 AF-N1)", () => {
  const MAX_REFUSED = 10;
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let agent: string;
  let ds: DataSource;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig({ maxSteps: 32, maxRefusedCalls: MAX_REFUSED }) } });
    await t.app.listen(0, '127.0.0.1');
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    agent = await publishAgent(t, org, 'refused', {
      instructions: 'x',
      capabilities: [{ id: 'fx-run-tools' }],
      model: { provider: provider.body.id, name: 'scripted-1' },
    });
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const run = async (input: string) => {
    const started = await t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=30')
      .send({ input })
      .expect(201);
    return started.body as { id: string; status: string; error?: { code: string }; usage: Record<string, number> };
  };
  const denials = async (runId: string) => {
    const [{ n }]: { n: number }[] = await ds.query(
      `SELECT count(*)::int AS n FROM audit_event WHERE org_id = $1 AND type = 'tool_call.denied' AND data->>'runId' = $2`,
      [org.id, runId],
    );
    return n;
  };
  const unknownCalls = (step: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `c${step}-${i}`, name: `no_such_tool_${i}`, arguments: '{}' }));

  it('fails the run once its refused calls reach the bound: no more steps, the rest answered without being asked for or audited', async () => {
    const before = model.requests.length;
    model.setScript((_req, i) => ({ toolCalls: unknownCalls(i, 8) }));
    const ended = await run('call tools that do not exist');
    expect(ended.status).toBe('failed');
    expect(ended.error?.code).toBe('too_many_refused_calls');
    // Two answers of 8: the first step's 8 refused, the second's asked for until the bound (a few run side by side).
    expect(model.requests.length - before).toBe(2);
    const audited = await denials(ended.id);
    expect(audited).toBeGreaterThanOrEqual(MAX_REFUSED);
    expect(audited).toBeLessThan(MAX_REFUSED + 4);
    // The count is the run's own: its usage answers the four counts it always did.
    expect(Object.keys(ended.usage).sort()).toEqual(['inputTokens', 'modelCalls', 'outputTokens', 'toolCalls']);
    const read = await t.http
      .get(`/api/v1/runs/${ended.id}`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(read.body.usage).toEqual(ended.usage);
    const lastAnswers = (read.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').slice(-2);
    expect(lastAnswers.map((m) => JSON.parse(m.content).error.code)).toEqual(['too_many_refused_calls', 'too_many_refused_calls']);
  }, 60_000);

  it('lets a run whose model corrects itself go on and finish', async () => {
    model.setScript(sequence({ toolCalls: unknownCalls(0, MAX_REFUSED - 1) }, { text: 'done' }));
    const ended = await run('one mistake, then an answer');
    expect(ended.status).toBe('succeeded');
    expect(await denials(ended.id)).toBe(MAX_REFUSED - 1);
  }, 60_000);
});
