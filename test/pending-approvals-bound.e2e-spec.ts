import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { RequestContext } from '../src/auth/principal';
import { ToolExecutor } from '../src/runtime/tool-executor.service';
import { bearer, createOrg, createTestApp, mcpMessage, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Nothing bounded how many calls of an organization wait for approval: two agent keys had 84 calls
 * a second wait (`202`), each kept a day (APPROVAL_TTL_SECONDS) with its call row and two audit
 * events, and every approver's inbox filled with them (attack round 15, Q-F3). Past
 * APPROVALS_MAX_PENDING_PER_ORG waiting, a REST or MCP call that would wait is `429 rate_limited`
 * with `Retry-After`, nothing recorded; a call that runs at once is not held to it.
 */
describe('approvals waiting at once, per organization (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let other: TestOrg;
  let agent: string;
  let theirs: string;

  beforeAll(async () => {
    t = await createTestApp({ config: { approvalsMaxPendingPerOrg: 3 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:read', 'memory:write']);
    other = await createOrg(t, ['memory:read', 'memory:write']);
    const draft = { instructions: 'x', capabilities: [{ id: 'memory' }, { id: 'memory-write' }] };
    agent = await publishAgent(t, org, 'waiting', draft);
    theirs = await publishAgent(t, other, 'waiting', draft);
  }, 240_000);
  afterAll(() => t.close());

  const remember = (o: TestOrg, agentId: string, content: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(o.keys.agent))
      .send({ tool: 'remember', arguments: { content } });
  const calls = async (o: TestOrg) => Number((await ds.query(`SELECT count(*)::int AS n FROM tool_call WHERE org_id = $1`, [o.id]))[0].n);

  it('refuses a call that would wait past the bound, over REST and MCP, recording nothing; runs what needs no approval; frees a place once one is decided', async () => {
    const waiting: { approvalId: string }[] = [];
    for (let i = 0; i < 3; i++) waiting.push((await remember(org, agent, `fact ${i}`).expect(202)).body);
    const before = await calls(org);

    const refused = await remember(org, agent, 'one too many').expect(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('APPROVALS_MAX_PENDING_PER_ORG') });
    expect(refused.headers['retry-after']).toBe('60');
    const overMcp = await mcpMessage(t, agent, org.keys.agent, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'remember', arguments: { content: 'one too many, over MCP' } },
    });
    expect(JSON.stringify(overMcp)).toContain('rate_limited');
    expect(await calls(org)).toBe(before);

    // What runs at once is not waiting for anyone.
    await t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'recall_memories', arguments: { query: 'fact' } })
      .expect(200);
    // Another organization's calls wait as before.
    await remember(other, theirs, 'theirs').expect(202);

    // One decided: a place again.
    await t.http
      .post(`/api/v1/approvals/${waiting[0].approvalId}/reject`)
      .set(...bearer(org.keys.approver))
      .send({ reason: 'no' })
      .expect(200);
    await remember(org, agent, 'now it waits').expect(202);
    await remember(org, agent, 'and this one not').expect(429);
  });

  it("refuses a platform run's own call that would wait past the bound too: its model reads rate_limited, nothing recorded", async () => {
    // The organization is at its bound (the test above leaves three waiting).
    const runId = randomUUID();
    await ds.query(
      `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, lease_owner, lease_expires_at)
       VALUES ($1, $2, $3, 1, 'running', 'x', '[]', $4, 'elsewhere', now() + interval '1 hour')`,
      [runId, org.id, agent, org.keyIds.agent],
    );
    const ctx: RequestContext = {
      requestId: randomUUID(),
      principal: { type: 'api_key', id: org.keyIds.agent, orgId: org.id, roles: ['agent'], orgScopes: ['memory:read', 'memory:write'] },
    };
    const before = await calls(org);
    // As the run engine asks: what it rejects with is the refusal its model reads.
    const asked = t.app.get(ToolExecutor).request(ctx, {
      agentId: agent,
      tool: 'remember',
      arguments: { content: 'asked by a run' },
      version: 1,
      runId,
      entryPoint: 'run',
      idempotencyKey: `run:${runId}:0:x`,
    });
    await expect(asked).rejects.toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('APPROVALS_MAX_PENDING_PER_ORG') });
    expect(await calls(org)).toBe(before);
  });
  it("calls asked for at once pass the bound by none: counted again with their write, under the organization's lock (attack round 22, AF-F2)", async () => {
    const o = await createOrg(t, ['memory:read', 'memory:write']);
    const mine = await publishAgent(t, o, 'burst', { instructions: 'x', capabilities: [{ id: 'memory' }, { id: 'memory-write' }] });
    // Each counted before any was written: 100 at once against a bound of 10 left 100 waiting.
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => remember(o, mine, `burst ${i}`)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(97);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('APPROVALS_MAX_PENDING_PER_ORG') });
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM approval WHERE org_id = $1 AND status = 'pending'`, [o.id]);
    expect(n).toBe(3);
    expect(await calls(o)).toBe(3);
  });
});
