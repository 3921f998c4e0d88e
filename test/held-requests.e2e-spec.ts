import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { metricSample, scrapeMetrics } from './support/metrics';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, mcpMessage, publishAgent, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { testRunsConfig } from './support/runs-config';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';

/**
 * Every request a node holds open on purpose (event streams, run streams, waits, MCP calls held for
 * a decision, tool calls in progress) keeps one of its HTTP_MAX_CONNECTIONS. Each kind was bounded
 * per organization alone: one organization could hold about 770 of 2,000 connections and three the
 * whole node, health checks included. Together they stay under HTTP_HELD_REQUESTS_MAX, one
 * organization's under HTTP_HELD_REQUESTS_PER_ORG; what is not held is refused or answered at once,
 * as past each kind's own bound.
 */
describe('requests held open, all kinds together (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let base: string;
  let server: FixtureMcpServer;
  const open: SseClient[] = [];

  beforeAll(async () => {
    model = await startScriptedModel(() => ({ hang: true }));
    server = await startFixtureMcpServer();
    t = await createTestApp({
      imports: [McpFixturesModule, RunFixturesModule],
      config: {
        runs: testRunsConfig({ modelRetries: 0 }),
        mcpApprovalWaitSeconds: 30,
        httpLimits: { maxBufferedBodyBytes: 64 * 1024 * 1024, maxConnections: 2_000, maxHeldRequests: 6, heldRequestsPerOrg: 3 },
      },
    });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}/api/v1`;
  }, 180_000);
  afterEach(async () => {
    for (const c of open.splice(0)) c.close();
    await until(
      () => scrapeMetrics(t).then((m) => metricSample(m, 'held_requests')),
      (n) => n === 0,
      10_000,
    );
  });
  afterAll(async () => {
    await server.close();
    await t.close();
    await model.close();
  });

  const stream = async (org: TestOrg) => {
    const c = await SseClient.open(`${base}/events`, { authorization: `Bearer ${org.keys.admin}` });
    open.push(c);
    return c;
  };
  const refusedStream = (org: TestOrg) =>
    SseClient.open(`${base}/events`, { authorization: `Bearer ${org.keys.admin}` }).then(
      (c) => {
        c.close();
        throw new Error('opened');
      },
      (err: { status: number; body: string }) => ({ status: err.status, body: JSON.parse(err.body) as { code: string; detail: string } }),
    );
  const greet = (org: TestOrg, agent: string) =>
    t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'fx-mcp-greet', arguments: { tag: 't' } });
  const mcpWrite = async (org: TestOrg, agent: string, text: string) => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fx-mcp-write', arguments: { tag: 't', text } } };
    const message = await mcpMessage(t, agent, org.keys.agent, call);
    return {
      isError: message.result.isError as boolean | undefined,
      text: message.result.content[0].text as string,
      status: message.result._meta?.['capability-platform/toolCall']?.status as string | undefined,
    };
  };
  const run = (org: TestOrg, agent: string) =>
    t.http
      .post(`/api/v1/agents/${agent}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=20')
      .send({ input: 'hi' })
      .expect(201);

  it("refuses an organization past its share (its tool calls aside), then everyone past the node's budget, and keeps answering what is not held", async () => {
    const [a, b, c] = [await createOrg(t), await createOrg(t), await createOrg(t)];
    const agentOf = async (org: TestOrg) => {
      const provider = await t.http
        .post('/api/v1/model-providers')
        .set(...bearer(org.keys.admin))
        .send({ name: 'hangs', kind: 'openai-compatible', baseUrl: model.url })
        .expect(201);
      const model_ = { provider: provider.body.id, name: 'scripted-1' };
      return publishAgent(t, org, 'held', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }], model: model_ });
    };
    const [agentA, agentC] = [await agentOf(a), await agentOf(c)];
    const before = await scrapeMetrics(t);

    // A's share is three, whatever kind: its fourth stream is refused though streams allow 256.
    const aStreams = [await stream(a), await stream(a), await stream(a)];
    const fourth = await refusedStream(a);
    expect(fourth).toMatchObject({ status: 429, body: { code: 'rate_limited' } });
    expect(fourth.body.detail).toContain('HTTP_HELD_REQUESTS_PER_ORG');
    // A's tool calls are not of its share (its open streams leave its agents their calls).
    await greet(a, agentA).expect(200);
    // An MCP call waiting for a person is answered still pending at once instead of held.
    const heldStarted = Date.now();
    const pending = await mcpWrite(a, agentA, 'not held');
    expect(pending).toMatchObject({ isError: undefined, status: 'pending_approval' });
    expect(Date.now() - heldStarted).toBeLessThan(5_000);
    // A run is made and answered at once, the wait not applied.
    const started = Date.now();
    const notWaited = await run(a, agentA);
    expect(notWaited.headers['preference-applied']).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(10_000);

    // B takes the node's last three: C, holding nothing, is refused too; naming the node's budget.
    for (let i = 0; i < 3; i++) await stream(b);
    const cStream = await refusedStream(c);
    expect(cStream).toMatchObject({ status: 429, body: { code: 'rate_limited' } });
    expect(cStream.body.detail).toContain('HTTP_HELD_REQUESTS_MAX');
    const call = await greet(c, agentC).expect(429);
    expect(call.headers['retry-after']).toBe('1');
    expect(call.body.detail).toContain('HTTP_HELD_REQUESTS_MAX');
    // Over MCP the same refusal is the call's error result; nothing was recorded.
    const overMcp = await mcpWrite(c, agentC, 'refused');
    expect(overMcp.isError).toBe(true);
    expect(overMcp.text).toContain('HTTP_HELD_REQUESTS_MAX');
    const calls = await t.http
      .get('/api/v1/tool-calls')
      .set(...bearer(c.keys.viewer))
      .expect(200);
    expect(calls.body.items).toEqual([]);
    // What is not held is answered: the health checks, reads.
    await t.http.get('/health').expect(200);
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(c.keys.viewer))
      .expect(200);
    const after = await scrapeMetrics(t);
    expect(metricSample(after, 'held_requests')).toBe(6);
    expect(metricSample(after, 'held_request_refusals_total{limit="node"}') - metricSample(before, 'held_request_refusals_total{limit="node"}')).toBe(3);
    expect(metricSample(after, 'held_request_refusals_total{limit="per_org"}') - metricSample(before, 'held_request_refusals_total{limit="per_org"}')).toBe(3);

    // A stream closed gives its place back, to whoever asks next.
    aStreams[0].close();
    await until(
      () => greet(c, agentC).then((r) => r.status),
      (status) => status === 200,
      10_000,
    );
    await until(
      () => scrapeMetrics(t).then((m) => metricSample(m, 'held_requests')),
      (n) => n === 5,
      10_000,
    );
    await stream(c);
  }, 60_000);

  it("holds an admin's MCP connection being listed at its server like any held request, refusing the next 429 before it reaches the server", async () => {
    const org = await createOrg(t, ['mcp:remote']);
    const admin = bearer(org.keys.admin);
    const created = await t.http
      .post('/api/v1/mcp-connections')
      .set(...admin)
      .send({ server: 'remote', name: 'slow', url: server.url })
      .expect(201);
    const sync = () => t.http.post(`/api/v1/mcp-connections/${created.body.id}/sync`).set(...admin);
    server.state.listDelayMs = 3_000;
    // supertest sends on `then`: the three are under way, waiting for the server, once it has them.
    const lists = server.listRequests.length;
    const held = [sync().then((r) => r), sync().then((r) => r), sync().then((r) => r)];
    await until(
      async () => server.listRequests.length - lists,
      (n) => n === 3,
      10_000,
    );
    const refused = await sync().expect(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('HTTP_HELD_REQUESTS_PER_ORG') });
    const another = await t.http
      .post('/api/v1/mcp-connections')
      .set(...admin)
      .send({ server: 'remote', name: 'second', url: server.url })
      .expect(429);
    expect(another.body.detail).toContain('Nothing was changed');
    await t.http
      .put(`/api/v1/mcp-connections/${created.body.id}/url`)
      .set(...admin)
      .send({ url: server.url })
      .expect(429);
    // None of the refused reached the server, nor stored anything.
    expect(server.listRequests.length - lists).toBe(3);
    const names = (
      await t.http
        .get('/api/v1/mcp-connections')
        .set(...admin)
        .expect(200)
    ).body.items.map((c: { name: string }) => c.name);
    expect(names).toEqual(['slow']);
    for (const res of await Promise.all(held)) expect(res.status).toBe(200);
    server.state.listDelayMs = undefined;
    await sync().expect(200);
  }, 60_000);
});
