import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * `POST /agents/{id}/runs` with `Prefer: wait=N` holds the request up to 60 s, keeping one of the
 * node's HTTP_MAX_CONNECTIONS. One organization's 2,400 runs on a provider that never answered held
 * 2,000 and `/health` was refused for 58 s of 60 (attack round 10, E-F6). Past RUN_WAITS_PER_ORG
 * held at once, a run is answered at once, the preference not applied.
 */
describe('runs answered after a wait, per organization (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;

  beforeAll(async () => {
    model = await startScriptedModel(() => ({ hang: true }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig({ modelRetries: 0, waitsPerOrg: 2 }) } });
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
    return publishAgent(t, org, 'waits', { instructions: 'x', capabilities: [], model: { provider: provider.body.id, name: 'scripted-1' } });
  }

  const start = (org: TestOrg, agent: string, wait: number) => {
    const started = Date.now();
    return t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', `wait=${wait}`)
      .send({ input: 'hi' })
      .expect(201)
      .then((res) => ({ ms: Date.now() - started, applied: res.headers['preference-applied'] as string | undefined, status: res.body.status as string }));
  };

  it("answers an organization's run past its share of waits at once, the preference not applied; another organization's waits", async () => {
    const org = await createOrg(t);
    const other = await createOrg(t);
    const [agent, theirs] = [await agentOf(org), await agentOf(other)];
    const held = [start(org, agent, 4), start(org, agent, 4)];
    await new Promise((r) => setTimeout(r, 1_000));

    const past = await start(org, agent, 4);
    expect(past).toMatchObject({ applied: undefined, status: 'running' });
    expect(past.ms).toBeLessThan(2_000);
    // Another organization's share is its own.
    const theirRun = await start(other, theirs, 2);
    expect(theirRun.applied).toBe('wait=2');
    expect(theirRun.ms).toBeGreaterThanOrEqual(1_900);

    for (const h of await Promise.all(held)) {
      expect(h.applied).toBe('wait=4');
      expect(h.ms).toBeGreaterThanOrEqual(3_900);
    }
    // Answered, they free their places.
    const again = await start(org, agent, 1);
    expect(again.applied).toBe('wait=1');
  }, 60_000);
});
