import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { RequestContext } from '../src/auth/principal';
import { ToolExecutor } from '../src/runtime/tool-executor.service';
import { toolCallKey } from '../src/runs/run-engine.service';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 13, M-F3: the `budget` capability counts a run's calls by `runId`, and a platform
 * run's calls count under the run's id, which any agent key of the organization reads
 * (`GET /runs`). A REST or MCP call naming that id ("not one of that run's calls", docs/api.md) was
 * counted against the run: two read-only calls of another runtime spent a run's budget of two, and
 * the run's own next call was refused `429 budget_exceeded`. Calls a client names a run in count
 * apart from the platform's runs now.
 */
describe("a platform run's budget is its own calls' (e2e, attack round 13 M-F3)", () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:read']);
    agentId = await publishAgent(t, org, 'budgeted', {
      instructions: 'Recalls, twice at most.',
      capabilities: [{ id: 'memory' }, { id: 'budget', config: { maxToolCallsPerRun: 2 } }],
    });
  });
  afterAll(() => t.close());

  /** A run of the agent, running, leased to a node that is not there (no worker takes it up meanwhile). */
  async function platformRun(): Promise<string> {
    const id = randomUUID();
    await ds.query(
      `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, lease_owner, lease_expires_at)
       VALUES ($1, $2, $3, 1, 'running', 'x', '[]', $4, 'elsewhere', now() + interval '1 hour')`,
      [id, org.id, agentId, org.keyIds.agent],
    );
    return id;
  }

  /** A call as the run engine asks for it (entry point `run`, the run's id, the engine's idempotency key). */
  function runCall(runId: string, idempotencyKey?: string) {
    const ctx: RequestContext = {
      requestId: randomUUID(),
      principal: { type: 'api_key', id: org.keyIds.agent, orgId: org.id, roles: ['agent'], orgScopes: ['memory:read'] },
    };
    return t.app
      .get(ToolExecutor)
      .request(ctx, { agentId, tool: 'recall_memories', arguments: { query: 'tea' }, version: 1, runId, entryPoint: 'run', idempotencyKey });
  }

  const restCall = (runId: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'recall_memories', arguments: { query: 'tea' }, runId });

  it("calls over REST naming a platform run's id do not spend its budget; the run's own calls do", async () => {
    const runId = await platformRun();
    expect((await restCall(runId)).status).toBe(200);
    expect((await restCall(runId)).status).toBe(200);
    // The client's own run of that name has spent its two calls.
    const third = await restCall(runId);
    expect({ status: third.status, code: third.body.code }).toEqual({ status: 429, code: 'budget_exceeded' });

    expect((await runCall(runId)).call.status).toBe('succeeded');
    expect((await runCall(runId)).call.status).toBe('succeeded');
    await expect(runCall(runId)).rejects.toMatchObject({ code: 'budget_exceeded' });
  });

  it('a run id a client chooses still counts per run and per agent, whatever its shape', async () => {
    for (const runId of ['batch-7', randomUUID()]) {
      expect((await restCall(runId)).status).toBe(200);
      expect((await restCall(runId)).status).toBe(200);
      expect((await restCall(runId)).status).toBe(429);
    }
  });

  it("a client's Idempotency-Key shaped like a run's call key is the client's: the run's call runs as its own", async () => {
    const runId = await platformRun();
    const key = toolCallKey(runId, { id: 'call_1', step: 1 });
    const claimFirst = (args: object) =>
      t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...bearer(org.keys.agent))
        .set('Idempotency-Key', key)
        .send({ tool: 'recall_memories', arguments: args, runId: 'other' });
    const client = await claimFirst({ query: 'coffee' });
    expect(client.status).toBe(200);
    // Claimed by the client with other arguments: before, the run's call was 422 idempotency_key_reused.
    const own = await runCall(runId, key);
    expect(own).toMatchObject({ replayed: false, call: { status: 'succeeded', entryPoint: 'run', runId } });
    expect(own.call.id).not.toBe(client.body.id);
    // Each key answers its own again.
    expect((await runCall(runId, key)).call.id).toBe(own.call.id);
    const again = await claimFirst({ query: 'coffee' });
    expect({ status: again.status, id: again.body.id }).toEqual({ status: 200, id: client.body.id });
  });
});
