import { RunsRepository } from '../src/runs/runs.repository';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Attack round 9 (D-F5): each stream of a waiting run polled it twice a second, two statements
 * each time, and streams of different runs shared nothing: one organization's 256 streams of 256
 * waiting runs were 1,035 statements a second on the pool every organization shares. The runs
 * watched on a node are now polled together, one statement per organization a tick, and a stream
 * reads events only when its run has new ones.
 */
describe('GET /runs/{id}/events: streams of many waiting runs (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let base: string;
  let org: TestOrg;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig() } });
    await t.app.listen(0, '127.0.0.1');
    base = `${await t.app.getUrl()}/api/v1`;
    org = await createOrg(t);
    // Starting an app with a fresh database can be slow on a busy machine.
  }, 180_000);
  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await t.close();
    await model.close();
  });

  it('polls them in one statement a tick, and each stream still gets its run’s events to the end', async () => {
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'many-runs', name: 'Many runs' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: provider.body.id, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    const RUNS = 20;
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const run = await t.http
        .post(`/api/v1/agents/${agent.body.id}/runs`)
        .set(...bearer(org.keys.agent))
        .set('Prefer', 'wait=10')
        .send({ input: 'x' })
        .expect(201);
      expect(run.body.status).toBe('waiting_for_approval');
      runIds.push(run.body.id);
      clients.push(await SseClient.open(`${base}/runs/${run.body.id}/events`, { authorization: `Bearer ${org.keys.viewer}` }));
    }
    for (const c of clients) await c.waitFor((x) => x.events.some((e) => e.event.type === 'run.waiting'));

    const repo = RunsRepository.prototype;
    const spies = [jest.spyOn(repo, 'events'), jest.spyOn(repo, 'status'), jest.spyOn(repo, 'heads'), jest.spyOn(repo, 'find')];
    await new Promise((r) => setTimeout(r, 2_000));
    const statements = spies.reduce((n, s) => n + s.mock.calls.length, 0);
    spies.forEach((s) => s.mockRestore());
    console.info(`statements in 2 s for ${RUNS} streams of ${RUNS} waiting runs: ${statements}`);
    // Four ticks, about one statement each (was two a stream a tick: 160).
    expect(statements).toBeLessThanOrEqual(12);

    for (const id of runIds) {
      await t.http
        .post(`/api/v1/runs/${id}/cancel`)
        .set(...bearer(org.keys.agent))
        .expect(200);
    }
    for (const c of clients) await new Promise((r) => (c.response.complete ? r(undefined) : c.response.on('end', r)));
    for (const c of clients) expect(c.events.at(-1)!.event.type).toBe('run.cancelled');
  }, 120_000);
});
