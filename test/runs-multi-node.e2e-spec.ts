import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { until as eventually } from './support/until';

/**
 * Runs across API nodes (server processes) on one PostgreSQL server: a run paused on one node is
 * resumed when its approval is decided on another, and a node killed in the middle of a run is
 * taken over by another once its lease expires, with every tool call run once.
 *
 * Only on a real server (DATABASE_URL): the embedded database is one node by design.
 */
const ENTRY = 'test/support/run-fixture-server.ts';
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('multi-node runs suite: not run on the embedded database (one node by design); it runs when DATABASE_URL is set');

(onRealServer ? describe : describe.skip)('agent runs on several nodes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-runs-'));
  const executions = join(dir, 'executions.log');
  const adminToken = 'cpa_runs_' + 'z'.repeat(24);
  let db: TestDatabase;
  let model: ScriptedModel;
  let env: Record<string, string>;
  let nodes: ServerProcess[] = [];
  const extra: ServerProcess[] = [];

  beforeAll(async () => {
    writeFileSync(executions, '');
    db = await createTestDatabase();
    model = await startScriptedModel(sequence({ text: 'unused' }));
    env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '4',
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      EGRESS_ALLOWED_HOSTS: '127.0.0.1',
      FX_RUN_LOG: executions,
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
      RUN_LEASE_SECONDS: '2',
      RUN_POLL_INTERVAL_MS: '200',
      RUN_MODEL_RETRY_BASE_MS: '10',
      SWEEP_INTERVAL_SECONDS: '1',
    };
    nodes = await Promise.all([startServerProcess(env, ENTRY), startServerProcess(env, ENTRY)]);
    // Two server processes starting at once take a while on a busy machine.
  }, 240_000);
  afterAll(async () => {
    await Promise.all([...nodes, ...extra].map((n) => stopServerProcess(n)));
    await model.close();
    await db.drop();
  });

  const node = (i: number) => request(nodes[i % nodes.length].url);
  const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
  const executed = (tool: string) =>
    readFileSync(executions, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`${tool} `));

  let keys: Record<string, string>;
  let agentId: string;

  beforeAll(async () => {
    const org = (
      await node(0)
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'runs-nodes', name: 'Runs' })
        .expect(201)
    ).body;
    keys = {};
    for (const role of ['builder', 'agent', 'approver', 'admin', 'viewer']) {
      keys[role] = (
        await node(1)
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body.token;
    }
    const provider = (
      await node(0)
        .post('/api/v1/model-providers')
        .set(...as(keys.admin))
        .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url, apiKey: 'sk-nodes' })
        .expect(201)
    ).body;
    agentId = (
      await node(1)
        .post('/api/v1/agents')
        .set(...as(keys.builder))
        .send({ slug: 'runner', name: 'Runner' })
        .expect(201)
    ).body.id;
    await node(0)
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as(keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: provider.id, name: 'scripted-1' } })
      .expect(200);
    await node(1)
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as(keys.builder))
      .expect(201);
  }, 120_000);

  async function until(runId: string, statuses: string[], ms = 20_000) {
    const deadline = Date.now() + ms;
    for (let i = 0; ; i++) {
      const res = await node(i)
        .get(`/api/v1/runs/${runId}`)
        .set(...as(keys.viewer))
        .expect(200);
      if (statuses.includes(res.body.status) || Date.now() > deadline) return res.body;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('a run paused on one node resumes when its approval is decided on the other, and the key is opened there too', async () => {
    const from = model.requests.length;
    model.setScript(
      sequence({ toolCalls: [{ id: 'm1', name: 'send_message', arguments: '{"to":"eve@example.com","body":"two nodes"}' }] }, { text: 'Sent from a node.' }),
    );
    const run = (
      await node(0)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .set('Prefer', 'wait=10')
        .send({ input: 'tell eve' })
        .expect(201)
    ).body;
    expect(run.status).toBe('waiting_for_approval');
    await node(1)
      .post(`/api/v1/approvals/${run.pendingApprovalIds[0]}/approve`)
      .set(...as(keys.approver))
      .send({})
      .expect(200);
    const done = await until(run.id, ['succeeded', 'failed']);
    expect(done).toMatchObject({ status: 'succeeded', output: 'Sent from a node.' });
    expect(executed('send_message').filter((l) => l.includes('two nodes'))).toHaveLength(1);
    expect(model.authorizations.slice(from).every((a) => a === 'Bearer sk-nodes')).toBe(true);
  }, 120_000);

  it('a node killed mid-run is taken over after its lease, and no tool call runs twice', async () => {
    const doomed = await startServerProcess(env, ENTRY);
    extra.push(doomed);
    const from = model.requests.length;
    // The first answer asks for a lookup; the second request (after the lookup ran) never gets an answer.
    model.setScript(sequence({ toolCalls: [{ id: 'k1', name: 'lookup_order', arguments: '{"query":"killed-1"}' }] }, { hang: true }));
    const run = (
      await request(doomed.url)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .send({ input: 'where is killed-1?' })
        .expect(201)
    ).body;
    await model.received(from + 2);
    model.setScript(sequence({ text: 'It has shipped.' }));
    doomed.child.kill('SIGKILL');
    const done = await until(run.id, ['succeeded', 'failed'], 30_000);
    expect(done).toMatchObject({ status: 'succeeded', output: 'It has shipped.', usage: { toolCalls: 1 } });
    expect(executed('lookup_order').filter((l) => l.includes('killed-1'))).toHaveLength(1);
    const calls = (
      await node(0)
        .get(`/api/v1/tool-calls?runId=${run.id}`)
        .set(...as(keys.viewer))
        .expect(200)
    ).body.items;
    expect(calls).toHaveLength(1);
    // The node that took over asked the model again with the lookup's result, once.
    const retried = model.requests.slice(from + 2);
    expect(retried).toHaveLength(1);
    expect(retried[0].messages.filter((m) => m.role === 'tool')).toHaveLength(1);
  }, 240_000);

  async function callsOf(runId: string) {
    return (
      await node(0)
        .get(`/api/v1/tool-calls?runId=${runId}`)
        .set(...as(keys.viewer))
        .expect(200)
    ).body.items as { status: string; tool: string; error?: { code: string } }[];
  }

  it('a read-only tool cut off by its node dying runs again at once on the node that takes over, and is recorded once', async () => {
    // The doomed node keeps the default tool timeout and grace: the lookup's idempotency claim stays
    // locked for 90 s, far past this test's wait, so only running it again under the rerun key can finish the run.
    const doomed = await startServerProcess({ ...env, FX_RUN_HANG: 'hang-read' }, ENTRY);
    extra.push(doomed);
    const from = model.requests.length;
    model.setScript(sequence({ toolCalls: [{ id: 'r1', name: 'lookup_order', arguments: '{"query":"hang-read"}' }] }, { text: 'Found it after all.' }));
    const run = (
      await request(doomed.url)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .send({ input: 'where is hang-read?' })
        .expect(201)
    ).body;
    await eventually(
      async () => executed('lookup_order').filter((l) => l.includes('hang-read')).length,
      (n) => n === 1,
    );
    doomed.child.kill('SIGKILL');
    const done = await until(run.id, ['succeeded', 'failed'], 30_000);
    expect(done).toMatchObject({ status: 'succeeded', output: 'Found it after all.', usage: { toolCalls: 1 } });
    // It read twice (allowed: a read has no effect in the world), and one call is on record.
    expect(executed('lookup_order').filter((l) => l.includes('hang-read'))).toHaveLength(2);
    expect(await callsOf(run.id)).toEqual([expect.objectContaining({ tool: 'lookup_order', status: 'succeeded' })]);
    const asked = model.requests.slice(from + 1);
    expect(asked).toHaveLength(1);
    expect(asked[0].messages.filter((m) => m.role === 'tool')).toEqual([expect.objectContaining({ tool_call_id: 'r1' })]);
  }, 240_000);

  it('a mutating tool cut off by its node dying mid-run is never run again: it reads interrupted and the run goes on', async () => {
    // The approved call runs on the approver's node, recorded as running under a lease (timeout + grace, 7 s here).
    const doomed = await startServerProcess({ ...env, FX_RUN_HANG: 'hang-write', TOOL_TIMEOUT_MS: '6000', TOOL_LEASE_GRACE_SECONDS: '1' }, ENTRY);
    extra.push(doomed);
    const from = model.requests.length;
    model.setScript(
      sequence(
        { toolCalls: [{ id: 'w1', name: 'send_message', arguments: '{"to":"ann@example.com","body":"hang-write"}' }] },
        { text: 'The message may not have gone out.' },
      ),
    );
    const run = (
      await node(0)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .set('Prefer', 'wait=10')
        .send({ input: 'tell ann' })
        .expect(201)
    ).body;
    expect(run.status).toBe('waiting_for_approval');
    // The approval's answer comes when the tool has run, which it never does on this node.
    const approving = request(doomed.url)
      .post(`/api/v1/approvals/${run.pendingApprovalIds[0]}/approve`)
      .set(...as(keys.approver))
      .send({})
      .then(
        () => undefined,
        () => undefined,
      );
    await eventually(
      async () => executed('send_message').filter((l) => l.includes('hang-write')).length,
      (n) => n === 1,
    );
    doomed.child.kill('SIGKILL');
    await approving;
    const done = await until(run.id, ['succeeded', 'failed'], 60_000);
    expect(done).toMatchObject({ status: 'succeeded', output: 'The message may not have gone out.' });
    expect(executed('send_message').filter((l) => l.includes('hang-write'))).toHaveLength(1);
    expect(await callsOf(run.id)).toEqual([
      expect.objectContaining({ tool: 'send_message', status: 'failed', error: expect.objectContaining({ code: 'interrupted' }) }),
    ]);
    const asked = model.requests.slice(from + 1);
    expect(asked).toHaveLength(1);
    expect(asked[0].messages.find((m) => m.role === 'tool')?.content).toContain('interrupted');
  }, 240_000);

  it("a run cancelled on another node stops its model call there within a moment, not at the lease's renewal", async () => {
    // A lease of a minute is renewed every 20 s: only the cancel's wake-up can stop the step sooner.
    const stepping = await startServerProcess({ ...env, RUN_LEASE_SECONDS: '60' }, ENTRY);
    extra.push(stepping);
    const from = model.requests.length;
    const abandoned = model.abandoned;
    model.setScript(sequence({ hang: true }));
    const run = (
      await request(stepping.url)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .send({ input: 'think for ever' })
        .expect(201)
    ).body;
    await model.received(from + 1);
    const cancelledAt = Date.now();
    const cancelled = await node(0)
      .post(`/api/v1/runs/${run.id}/cancel`)
      .set(...as(keys.agent))
      .expect(200);
    expect(cancelled.body.status).toBe('cancelled');
    await eventually(
      async () => model.abandoned,
      (n) => n > abandoned,
      10_000,
    );
    expect(Date.now() - cancelledAt).toBeLessThan(10_000);
    // Not asked again: the step ended, it did not retry the model call it lost.
    await new Promise((r) => setTimeout(r, 500));
    expect(model.requests.length).toBe(from + 1);
  }, 120_000);

  it('a key replaced on one node is what the other nodes send from their next model request', async () => {
    const providerId = (
      await node(0)
        .get('/api/v1/model-providers')
        .set(...as(keys.viewer))
        .expect(200)
    ).body.items[0].id;
    const from = model.requests.length;
    model.setScript(
      sequence(
        { toolCalls: [{ id: 'p1', name: 'send_message', arguments: '{"to":"kim@example.com","body":"rotated"}' }] },
        { text: 'Sent after the rotation.' },
      ),
    );
    const run = (
      await node(0)
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(keys.agent))
        .set('Prefer', 'wait=10')
        .send({ input: 'tell kim' })
        .expect(201)
    ).body;
    expect(run.status).toBe('waiting_for_approval');
    await node(1)
      .put(`/api/v1/model-providers/${providerId}/api-key`)
      .set(...as(keys.admin))
      .send({ apiKey: 'sk-nodes-rotated' })
      .expect(200);
    await node(0)
      .post(`/api/v1/approvals/${run.pendingApprovalIds[0]}/approve`)
      .set(...as(keys.approver))
      .send({})
      .expect(200);
    expect(await until(run.id, ['succeeded', 'failed'])).toMatchObject({ status: 'succeeded', output: 'Sent after the rotation.' });
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-nodes', 'Bearer sk-nodes-rotated']);
  }, 120_000);
});
