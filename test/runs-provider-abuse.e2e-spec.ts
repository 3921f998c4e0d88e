import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedAnswer, ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/** The body as text (an event stream, which ends with its run). */
function text(response: any, done: (err: Error | null, body: string) => void): void {
  const res = response as import('node:http').IncomingMessage;
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (d: string) => (body += d));
  res.on('end', () => done(null, body));
}

/**
 * Attack round 9 (D): what a model provider (any URL an organization's admin saves) can make a
 * run do by the way it answers. Each test failed on the code before its fix.
 */
describe('runs against a hostile model provider (e2e)', () => {
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
      .set(...bearer(org.keys.admin))
      .send({ name: 'hostile', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    providerId = res.body.id;
    // Starting an app with a fresh database can be slow on a busy machine.
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  async function agentWith(draft: object): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: `hostile-${++slugs}`, name: `Hostile ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send(draft)
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    return a.body.id;
  }

  /** A streamed answer of a few large chunks, written as they are (the scripted answers split text into pieces of 7). */
  function streamed(...deltas: [object, string | null][]): ScriptedAnswer {
    const events = deltas.map(([delta, finish]) =>
      JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] }),
    );
    return { garbage: [...events, '[DONE]'].join('\n\ndata: ') };
  }

  async function run(agentId: string) {
    const res = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=30')
      .send({ input: 'x' })
      .expect(201);
    return res.body;
  }

  it('an answer is as long as JSON writes it: 400,000 U+0001 are 2,400,000 characters, past the bound', async () => {
    const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'controls' } });
    // Before the fix it was 400,000 characters, kept, and its event 2.4 MB (at 1,990,000, 11.9 MB each for the answer, its event, the output's).
    model.setScript(() => streamed([{ role: 'assistant', content: '\u0001'.repeat(400_000) }, null], [{}, 'stop']));
    expect(await run(agentId)).toMatchObject({
      status: 'failed',
      error: { code: 'model_error', message: expect.stringContaining('longer than 2000000 characters') },
    });
    model.setScript(() => streamed([{ role: 'assistant', content: 'x'.repeat(400_000) }, null], [{}, 'stop']));
    expect(await run(agentId)).toMatchObject({ status: 'succeeded' });
  }, 60_000);

  it("a run's messages are as long as JSON writes them: tool calls of 900,000 quotes pass the bound in five steps", async () => {
    const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'quotes' } });
    model.setScript((_req, i) =>
      streamed([
        { role: 'assistant', tool_calls: [{ index: 0, id: `q${i}`, type: 'function', function: { name: 'lookup_order', arguments: '"'.repeat(900_000) } }] },
        'tool_calls',
      ]),
    );
    // Before the fix each step added 900,000 characters (1,800,000 as stored), and the run went on to max_steps.
    const body = await run(agentId);
    expect(body).toMatchObject({ status: 'failed', error: { code: 'transcript_too_large' }, usage: { modelCalls: 5 } });
  }, 60_000);

  it('a finish reason of 4 MB is kept as its first 64 characters: the events of a run stay the size of its answers (attack round 13, K-F1)', async () => {
    const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'long-finish' } });
    model.setScript((_req, i) =>
      streamed([
        { role: 'assistant', tool_calls: [{ index: 0, id: `f${i}`, type: 'function', function: { name: 'lookup_order', arguments: '{"query":"a"}' } }] },
        'tool_calls'.padEnd(4_000_000, '!'),
      ]),
    );
    // Before the fix each step's model.completed event held the whole reason: 6 steps, 24 MB of events, for a transcript of 2 KB.
    const body = await run(agentId);
    expect(body).toMatchObject({ status: 'failed', error: { code: 'max_steps' } });
    const events = await t.http
      .get(`/api/v1/runs/${body.id}/events`)
      .set(...bearer(org.keys.viewer))
      .buffer(true)
      .parse(text)
      .expect(200);
    expect(events.body.length).toBeLessThan(20_000);
    expect(events.body).toContain(`"finishReason":"${'tool_calls'.padEnd(64, '!')}"`);
  }, 60_000);

  it('a provider whose every 400 names reasoning_effort is asked again once without it, and the run fails', async () => {
    const agentId = await agentWith({ instructions: 'x', capabilities: [{ id: 'thinking' }], model: { provider: providerId, name: 'always-refuses' } });
    const from = model.requests.length;
    model.setScript(() => ({ status: 400, body: { error: { message: 'reasoning_effort is not supported with this model', param: 'reasoning_effort' } } }));
    // Before the fix the run asked again at every answer, for ever (650 requests a second), and stayed `running`.
    const run = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=5')
      .send({ input: 'x' })
      .expect(201);
    expect(run.body).toMatchObject({ status: 'failed', error: { code: 'model_error', message: expect.stringContaining('400') } });
    expect(model.requests.slice(from).map((r) => r.reasoning_effort)).toEqual(['medium', undefined]);
  }, 30_000);
});
