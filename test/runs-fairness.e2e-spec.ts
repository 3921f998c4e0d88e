import { DataSource } from 'typeorm';
import { RunWorker } from '../src/runs/run-worker.service';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Organizations share a node's run slots (RUN_MAX_CONCURRENT) fairly, on either database: a run
 * holds its slot for its whole model call, so one organization whose provider never answers
 * (a server on a loopback port that takes the request and is silent) held every slot, and the
 * runs of every other organization waited behind all of its queued runs. And the last slot
 * (RUN_RESERVED_FOR_NEW_ORGS) goes only to an organization stepping none here: without it, two such
 * organizations filled this node, as four did a node with the default caps.
 */
describe('runs: organizations share a node (e2e)', () => {
  let t: TestApp;
  let silent: ScriptedModel;
  let healthy: ScriptedModel;
  let failing: ScriptedModel;
  let worker: RunWorker;
  const maxConcurrent = 4;
  const perOrg = 2;
  const reserved = 1;
  const started: { org: TestOrg; id: string }[] = [];

  beforeAll(async () => {
    silent = await startScriptedModel(sequence({ hang: true }));
    healthy = await startScriptedModel(sequence({ text: 'done' }));
    failing = await startScriptedModel(sequence({ status: 503, headers: { 'retry-after-ms': '1500' } }));
    t = await createTestApp({
      config: {
        runs: testRunsConfig({
          maxSteps: 4,
          maxConcurrent,
          maxConcurrentPerOrg: perOrg,
          reservedForNewOrgs: reserved,
          // Retried (`failing`, below); a silent provider's attempt outlasts every test here.
          modelRetries: 2,
          modelTimeoutMs: 120_000,
        }),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    worker = t.app.get(RunWorker);
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await silent.close();
    await healthy.close();
    await failing.close();
  });
  // Each test starts from an idle node: every run a test started is cancelled (a call in flight is aborted).
  afterEach(async () => {
    for (const run of started.splice(0)) await t.http.post(`/api/v1/runs/${run.id}/cancel`).set(...bearer(run.org.keys.agent));
    await worker.idle();
  });

  /** A new organization with an agent whose model is served by `model`. */
  async function tenant(model: ScriptedModel): Promise<{ org: TestOrg; agentId: string }> {
    const org = await createOrg(t, []);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'model', kind: 'openai-compatible', baseUrl: model.url, apiKey: 'sk-test-fairness' })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'runner', name: 'Runner' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [], model: { provider: provider.body.id, name: 'm' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    return { org, agentId: agent.body.id };
  }

  async function startRuns(who: { org: TestOrg; agentId: string }, n: number, wait = 0): Promise<{ id: string; status: string }[]> {
    const runs: { id: string; status: string }[] = [];
    for (let i = 0; i < n; i++) {
      const res = await t.http
        .post(`/api/v1/agents/${who.agentId}/runs`)
        .set(...bearer(who.org.keys.agent))
        .set('Prefer', `wait=${wait}`)
        .send({ input: 'go' })
        .expect(201);
      started.push({ org: who.org, id: res.body.id });
      runs.push(res.body);
    }
    return runs;
  }

  async function settle(org: TestOrg, id: string, ms: number): Promise<{ status: string; error?: unknown }> {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = await t.http
        .get(`/api/v1/runs/${id}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      if (res.body.status !== 'running' || Date.now() > deadline) return res.body;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("an organization whose provider never answers steps at most its share; another organization's run succeeds at once", async () => {
    const attacker = await tenant(silent);
    const from = silent.requests.length;
    const queued = await startRuns(attacker, 12);
    await silent.received(from + perOrg);
    const victim = await tenant(healthy);
    const began = Date.now();
    const [run] = await startRuns(victim, 1, 10);
    expect(run.status).toBe('succeeded');
    expect(Date.now() - began).toBeLessThan(5000);
    // The attacker's runs beyond its share wait for a slot of its own; the node's other slots stay free.
    expect(queued.filter((r) => worker.isStepping(r.id))).toHaveLength(perOrg);
    expect(silent.requests.length - from).toBe(perOrg);
  });

  it("two organizations whose providers never answer leave the reserved slot: another organization's run succeeds at once", async () => {
    const [first, second] = [await tenant(silent), await tenant(silent)];
    const from = silent.requests.length;
    const queued = [...(await startRuns(first, perOrg + 3)), ...(await startRuns(second, perOrg + 3))];
    // The first steps its share; the second one run, since a second would take the last slot.
    await silent.received(from + maxConcurrent - reserved);
    await new Promise((r) => setTimeout(r, 500));
    expect(queued.filter((r) => worker.isStepping(r.id))).toHaveLength(maxConcurrent - reserved);
    const victim = await tenant(healthy);
    const began = Date.now();
    const [run] = await startRuns(victim, 1, 10);
    expect(run.status).toBe('succeeded');
    expect(Date.now() - began).toBeLessThan(5000);
    expect(silent.requests.length - from).toBe(maxConcurrent - reserved);
  });

  it('a slot that frees on a full node goes to the organization stepping the fewest runs here, not to the oldest queued run', async () => {
    // Three organizations fill it: two slots, then one each (the last, reserved, to the third).
    const [first, second, third] = [await tenant(silent), await tenant(silent), await tenant(silent)];
    const from = silent.requests.length;
    const firstRuns = await startRuns(first, perOrg + 3);
    await startRuns(second, perOrg + 3);
    await startRuns(third, perOrg + 3);
    await silent.received(from + maxConcurrent);
    const victim = await tenant(healthy);
    const [run] = await startRuns(victim, 1);
    // The node is full: the run waits for a slot, behind the others' queued runs in time.
    await new Promise((r) => setTimeout(r, 500));
    expect(worker.isStepping(run.id)).toBe(false);
    const asked = healthy.requests.length;
    // The first keeps one slot and has runs queued from before the victim's: the victim's still comes first.
    const freed = firstRuns.find((r) => worker.isStepping(r.id))!;
    await t.http
      .post(`/api/v1/runs/${freed.id}/cancel`)
      .set(...bearer(first.org.keys.agent))
      .expect(200);
    await healthy.received(asked + 1);
    // Its model was asked before any queued run of the others started.
    expect(silent.requests.length - from).toBe(maxConcurrent);
    expect(await settle(victim.org, run.id, 5000)).toMatchObject({ status: 'succeeded' });
  });

  it('a run whose provider keeps failing gives its slot back between attempts, and the count of attempts follows it to the next claim', async () => {
    const flaky = await tenant(failing);
    const from = failing.requests.length;
    const [run] = await startRuns(flaky, 1);
    await failing.received(from + 1);
    // Waiting out the provider's Retry-After with no node holding it: its slot is free meanwhile.
    const waiting = async () =>
      (
        (await t.app.get(DataSource).query(`SELECT model_attempts, lease_owner FROM run WHERE id = $1`, [run.id])) as {
          model_attempts: number;
          lease_owner: string | null;
        }[]
      )[0];
    for (let i = 0; i < 100 && (await waiting()).model_attempts === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await waiting()).toEqual({ model_attempts: 1, lease_owner: null });
    expect(worker.isStepping(run.id)).toBe(false);
    // Every claim continues the count: the first attempt and RUN_MODEL_RETRIES (2), then the provider's error.
    expect(await settle(flaky.org, run.id, 10_000)).toMatchObject({
      status: 'failed',
      error: { code: 'model_error', message: expect.stringContaining('503') },
    });
    expect(failing.requests.length - from).toBe(3);
  });
});
