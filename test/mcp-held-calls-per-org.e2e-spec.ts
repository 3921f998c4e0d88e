import { DataSource } from 'typeorm';
import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, mcpMessage, publishAgent, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * An MCP `tools/call` that waits for a person is held open for MCP_APPROVAL_WAIT_SECONDS, and so
 * keeps one of the node's HTTP_MAX_CONNECTIONS. One organization's agent keys held 2,000 such calls
 * (each with other arguments, so each its own approval) and every other client, health checks
 * included, was refused for 50 s (attack round 10, E-F5). Past MCP_HELD_CALLS_PER_ORG held at once,
 * a call is answered "still pending" at once, as after a wait.
 */
describe('MCP calls held for approval, per organization (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: 30, mcpHeldCallsPerOrg: 3 } });
    ds = t.app.get(DataSource);
  }, 180_000);
  afterAll(() => t.close());

  const agentOf = (org: TestOrg) => publishAgent(t, org, 'held-cap', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }] });

  const write = async (org: TestOrg, agent: string, text: string) => {
    const started = Date.now();
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fx-mcp-write', arguments: { tag: 't', text } } };
    const message = await mcpMessage(t, agent, org.keys.agent, call);
    return {
      ms: Date.now() - started,
      status: message.result._meta['capability-platform/toolCall'].status as string,
      text: message.result.content[0].text as string,
    };
  };
  const pending = async (org: TestOrg): Promise<{ approval_id: string }[]> =>
    ds.query(`SELECT approval_id FROM tool_call WHERE org_id = $1 AND status = 'pending_approval' ORDER BY created_at`, [org.id]);
  const approve = (org: TestOrg, approvalId: string) =>
    t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);

  it("answers an organization's call past its held share at once as still pending, and holds another organization's", async () => {
    const org = await createOrg(t);
    const other = await createOrg(t);
    const [agent, theirs] = [await agentOf(org), await agentOf(other)];
    const held = [1, 2, 3].map((i) => write(org, agent, `held ${i}`));
    await until(
      () => pending(org),
      (rows) => rows.length === 3,
      10_000,
    );

    const past = await write(org, agent, 'one more');
    expect(past.status).toBe('pending_approval');
    expect(past.text).toContain('still waiting');
    expect(past.ms).toBeLessThan(5_000);

    // Another organization's share is its own: its call is held, and answered with the decision.
    const theirCall = write(other, theirs, 'theirs');
    await until(
      () => pending(other),
      (rows) => rows.length === 1,
      10_000,
    );
    await approve(other, (await pending(other))[0].approval_id);
    expect(await theirCall).toMatchObject({ status: 'succeeded' });

    // A held call answered frees its place: the next is held again until decided.
    const [first] = await pending(org);
    await approve(org, first.approval_id);
    expect(await Promise.race(held.map((h) => h.then((r) => r.status)))).toBe('succeeded');
    const next = write(org, agent, 'next');
    await until(
      () => pending(org),
      (rows) => rows.length === 4,
      10_000,
    );
    const waiting = (await pending(org)).at(-1)!;
    await approve(org, waiting.approval_id);
    expect(await next).toMatchObject({ status: 'succeeded' });

    for (const { approval_id } of await pending(org)) await approve(org, approval_id);
    expect((await Promise.all(held)).map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  }, 60_000);
});
