import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Every node's poll ranks each run waiting for a slot, of every organization: one organization's
 * 100,000 runs queued behind a provider that never answered (any URL its admin saves) made each
 * poll of every node 0.7 s, and nothing bounded how many it queued (attack round 13, K-F4). Past
 * RUN_MAX_RUNNING_PER_ORG runs `running`, a new run is `429 rate_limited`, nothing started.
 */
describe('runs running per organization (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;

  beforeAll(async () => {
    model = await startScriptedModel(() => ({ hang: true }));
    // One slot for the organization: the other runs wait for it, as a queue behind a silent provider does.
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: { runs: testRunsConfig({ modelRetries: 0, maxConcurrentPerOrg: 1, maxRunningPerOrg: 3 }) },
    });
    await t.app.listen(0, '127.0.0.1');
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  async function agentOf(org: TestOrg): Promise<string> {
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'hangs', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    return publishAgent(t, org, 'queued', { instructions: 'x', capabilities: [], model: { provider: provider.body.id, name: 'scripted-1' } });
  }

  const start = (org: TestOrg, agent: string) =>
    t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .send({ input: 'hi' });

  it("refuses an organization's run past its runs running, nothing started; another organization's starts; a finished one frees a place", async () => {
    const org = await createOrg(t);
    const other = await createOrg(t);
    const [agent, theirs] = [await agentOf(org), await agentOf(other)];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await start(org, agent).expect(201)).body.id);

    // Before the fix it was started, and queued, like the 100,000 before it.
    const past = await start(org, agent).expect(429);
    expect(past.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('RUN_MAX_RUNNING_PER_ORG') });
    expect(past.headers['retry-after']).toBe('5');
    const listed = await t.http
      .get('/api/v1/runs')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(listed.body.items.map((r: { id: string }) => r.id).sort()).toEqual([...ids].sort());

    await start(other, theirs).expect(201);

    await t.http
      .post(`/api/v1/runs/${ids[2]}/cancel`)
      .set(...bearer(org.keys.agent))
      .expect(200);
    await start(org, agent).expect(201);
  }, 60_000);
  it("runs asked for at once pass the bound by none: counted under the organization's lock with their write (attack round 22, AF-F1)", async () => {
    const org = await createOrg(t);
    const agent = await agentOf(org);
    // Each counted before any was written: 200 at once against a bound of 5 started 157.
    const answers = await Promise.all(Array.from({ length: 30 }, () => start(org, agent)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(27);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('RUN_MAX_RUNNING_PER_ORG') });
    expect(refused.headers['retry-after']).toBe('5');
    const listed = await t.http
      .get('/api/v1/runs')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(listed.body.items).toHaveLength(3);
  }, 60_000);
});
