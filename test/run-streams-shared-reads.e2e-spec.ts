import { DataSource } from 'typeorm';
import { RunSignals } from '../src/runs/run-signals';
import { RunsRepository } from '../src/runs/runs.repository';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Security finding (with GET /events'): every stream of a run read it on its own, twice a second
 * while the run waited and once per write, so one organization's 256 run streams were 256 reads
 * of each. The streams of a run woken together send one read; each still gets every event once.
 */
describe('GET /runs/{id}/events: the streams of a run share their reads (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let base: string;
  let org: TestOrg;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: {
        runs: testRunsConfig(),
      },
    });
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

  it('polls and reads a run once for all its streams, and delivers each event to every one of them', async () => {
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'shared-run', name: 'Shared run' })
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
    model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }, { text: 'Sent.' }));
    const run = await t.http
      .post(`/api/v1/agents/${agent.body.id}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=10')
      .send({ input: 'x' })
      .expect(201);
    expect(run.body.status).toBe('waiting_for_approval');
    const runId = run.body.id as string;

    const STREAMS = 40;
    for (let i = 0; i < STREAMS; i++) clients.push(await SseClient.open(`${base}/runs/${runId}/events`, { authorization: `Bearer ${org.keys.viewer}` }));
    for (const c of clients) await c.waitFor((x) => x.events.some((e) => (e.event as { type: string }).type === 'run.waiting'));
    const before = clients[0].events.length;

    const reads = jest.spyOn(RunsRepository.prototype, 'events');
    const statuses = jest.spyOn(RunsRepository.prototype, 'status');
    await new Promise((r) => setTimeout(r, 2_000));
    console.info(`reads in 2 s: ${reads.mock.calls.length} of events, ${statuses.mock.calls.length} of the status`);
    // Four polls in 2 s, each about one read of the events and one of the status for all 40 streams (was 320).
    expect(reads.mock.calls.length + statuses.mock.calls.length).toBeLessThanOrEqual(32);

    // A write of the run here wakes every stream at once: one read hands the event to all of them (a poll may fall in between; one read each was 40).
    reads.mockClear();
    await t.app
      .get(DataSource)
      .query(`INSERT INTO run_event (org_id, run_id, type, data) VALUES ($1, $2, 'run.compacted', '{"n": 1}'::jsonb)`, [org.id, runId]);
    t.app.get(RunSignals).notify(runId);
    for (const c of clients) await c.waitFor((x) => x.events.length === before + 1);
    expect(reads.mock.calls.length).toBeLessThanOrEqual(8);

    // The run ends: every stream gets its last events once, then ends.
    await t.http
      .post(`/api/v1/runs/${runId}/cancel`)
      .set(...bearer(org.keys.agent))
      .expect(200);
    for (const c of clients) await new Promise((r) => (c.response.complete ? r(undefined) : c.response.on('end', r)));
    const ids = clients[0].events.map((e) => e.id);
    expect((clients[0].events.at(-1)!.event as { type: string }).type).toBe('run.cancelled');
    expect(new Set(ids).size).toBe(ids.length);
    for (const c of clients) expect(c.events.map((e) => e.id)).toEqual(ids);
  }, 120_000);
});
