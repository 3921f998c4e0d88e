import { DataSource } from 'typeorm';
import { ExecFixturesModule, holdSlowCall, runsTagged } from './fixtures/exec-fixtures.module';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

const ACCEPT = 'application/json, text/event-stream';

/**
 * A tool call asked for over REST or MCP holds its request while the tool runs (up to
 * TOOL_TIMEOUT_MS), keeping one of the node's HTTP_MAX_CONNECTIONS. One organization's 2,400 calls
 * of an MCP tool whose server never answered kept every other client, health checks included, out
 * for 28 s of 40 (attack round 10, E-F7). Past TOOL_CALLS_IN_FLIGHT_PER_ORG in progress, another
 * is `429 rate_limited` with `Retry-After`, and nothing is recorded.
 */
describe('tool calls in progress, per organization (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ imports: [ExecFixturesModule], config: { toolCallsInFlightPerOrg: 2 } });
    ds = t.app.get(DataSource);
  }, 180_000);
  afterAll(() => t.close());

  const agentOf = (org: TestOrg) => publishAgent(t, org, 'in-flight', { instructions: 'x', capabilities: [{ id: 'fx-exec-tools' }] });
  const slow = (org: TestOrg, agent: string, tag: string) =>
    t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'fx-exec-slow', arguments: { tag, ms: 1 } });
  const calls = async (org: TestOrg) => Number((await ds.query(`SELECT count(*)::int AS n FROM tool_call WHERE org_id = $1`, [org.id]))[0].n);

  it("refuses an organization's call past its calls in progress 429, recording nothing, over REST and MCP; another organization's runs", async () => {
    const org = await createOrg(t);
    const other = await createOrg(t);
    const [agent, theirs] = [await agentOf(org), await agentOf(other)];
    // A call waiting for approval, to approve while the organization's places are taken.
    const pending = await t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'fx-exec-write', arguments: { tag: `write-${org.id}` } })
      .expect(202);
    const tags = ['held-a', 'held-b'].map((tag) => `${tag}-${org.id}`);
    const releases = tags.map((tag) => holdSlowCall(tag));
    // supertest sends on `then`: started now, answered when released.
    const held = tags.map((tag) => slow(org, agent, tag).then((res) => res));
    await until(
      async () => tags.map((tag) => runsTagged(tag).length),
      (n) => n.every((x) => x === 1),
      10_000,
    );
    const before = await calls(org);

    const refused = await slow(org, agent, `past-${org.id}`).expect(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('TOOL_CALLS_IN_FLIGHT_PER_ORG') });
    expect(refused.headers['retry-after']).toBe('1');
    const overMcp = await t.http
      .post(`/api/v1/agents/${agent}/mcp`)
      .set(...bearer(org.keys.agent))
      .set('Accept', ACCEPT)
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fx-exec-slow', arguments: { tag: `mcp-${org.id}`, ms: 1 } } })
      .expect(200);
    expect(overMcp.text).toContain('rate_limited');
    expect(runsTagged(`past-${org.id}`)).toHaveLength(0);
    expect(runsTagged(`mcp-${org.id}`)).toHaveLength(0);
    expect(await calls(org)).toBe(before);

    // An approval runs its call in the approver's request: it counts too, and is left pending.
    const approve = () =>
      t.http
        .post(`/api/v1/approvals/${pending.body.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({});
    expect((await approve().expect(429)).body.code).toBe('rate_limited');
    expect(runsTagged(`write-${org.id}`)).toHaveLength(0);
    expect(
      (
        await t.http
          .get(`/api/v1/approvals/${pending.body.approvalId}`)
          .set(...bearer(org.keys.approver))
          .expect(200)
      ).body.status,
    ).toBe('pending');

    // Another organization's calls are its own.
    expect((await slow(other, theirs, `theirs-${other.id}`).expect(200)).body.status).toBe('succeeded');

    releases.forEach((release) => release());
    for (const res of await Promise.all(held)) expect(res.status).toBe(200);
    expect((await slow(org, agent, `after-${org.id}`).expect(200)).body.status).toBe('succeeded');
    expect((await approve().expect(200)).body.toolCall.status).toBe('succeeded');
    expect(runsTagged(`write-${org.id}`)).toHaveLength(1);
  }, 60_000);
});
