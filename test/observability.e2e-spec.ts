import { connect } from 'node:net';
import { ProxyTracerProvider, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { RecordedSpan, RecordingTracerProvider } from '../src/telemetry/recording-tracer';
import { DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT, startTracing, stopTracing } from '../src/telemetry/tracing';
import { ExecFixturesModule, FX_EXEC_SCOPE } from './fixtures/exec-fixtures.module';
import { metricSample } from './support/metrics';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/** Issue 19: what an operator reads. Metrics at /metrics; a span per tool call (in-memory exporter). */
jest.setTimeout(300_000);

const METRICS_TOKEN = 'metrics-token-' + 'x'.repeat(20);

describe('observability (e2e)', () => {
  const exporter = new InMemorySpanExporter();
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;

  beforeAll(async () => {
    // Tracing with a processor of the test's own; module patching stays off in a shared test process
    // (the server-process suite checks the http, Fastify and pg spans).
    startTracing({}, { spanProcessors: [new SimpleSpanProcessor(exporter)], instrumentModules: false });
    t = await createTestApp({ imports: [ExecFixturesModule], config: { metricsToken: METRICS_TOKEN } });
    org = await createOrg(t, [FX_EXEC_SCOPE]);
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'obs', name: 'Obs' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'Use the fixtures.', capabilities: [{ id: 'fx-exec-tools' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    agentId = a.body.id;
  });
  afterAll(async () => {
    await t.close();
    await stopTracing();
  });

  const scrape = async () =>
    (
      await t.http
        .get('/metrics')
        .set(...bearer(METRICS_TOKEN))
        .expect(200)
    ).text;
  const sample = metricSample;
  const callTool = (body: object) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send(body);

  describe('GET /metrics', () => {
    it('answers only the METRICS_TOKEN when it is set, as a problem document otherwise', async () => {
      const none = await t.http.get('/metrics').expect(401);
      expect(none.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(none.body.code).toBe('unauthorized');
      await t.http
        .get('/metrics')
        .set(...bearer(METRICS_TOKEN + 'x'))
        .expect(401);
      await t.http
        .get('/metrics')
        .set(...bearer(org.keys.admin))
        .expect(401);
      const ok = await t.http
        .get('/metrics')
        .set(...bearer(METRICS_TOKEN))
        .expect(200);
      expect(ok.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(ok.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(ok.text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
      expect(ok.text).toMatch(/^db_pool_max_connections \d+/m);
      expect(ok.text).toMatch(/^db_query_duration_seconds_count \d+/m);
    });

    it('counts HTTP requests by route template and status, never by URL', async () => {
      const unknownId = '00000000-0000-4000-8000-000000000000';
      await t.http
        .get(`/api/v1/agents/${unknownId}`)
        .set(...bearer(org.keys.viewer))
        .expect(404);
      await t.http.get('/no/such/path/' + 'z'.repeat(40)).expect(404);
      const text = await scrape();
      expect(sample(text, 'http_requests_total{method="GET",route="/api/v1/agents/:agentId",status="404"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'http_requests_total{method="GET",route="unmatched",status="404"}')).toBeGreaterThanOrEqual(1);
      expect(text).not.toContain(unknownId);
      expect(text).not.toContain('zzzz');
      expect(text).toMatch(
        /^http_request_duration_seconds_bucket\{le="0\.1",method="POST",route="\/api\/v1\/agents\/:agentId\/publish",status_class="2xx"\} \d+/m,
      );
    });

    it('counts requests answered before they were parsed (headers too large, an unmet Expect) under route unparsed', async () => {
      const server = t.app.getHttpServer() as import('node:http').Server;
      if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as import('node:net').AddressInfo;
      const raw = (text: string) =>
        new Promise<string>((resolve) => {
          let answer = '';
          const socket = connect(port, '127.0.0.1', () => socket.write(text));
          socket.on('data', (d) => (answer += d.toString()));
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(answer));
        });
      const series = (status: number) => `http_requests_total{method="OTHER",route="unparsed",status="${status}"}`;
      const before = await scrape();
      expect(await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 431/);
      expect(await raw('GET /health HTTP/1.1\r\nHost: x\r\nExpect: nonsense\r\n\r\n')).toMatch(/^HTTP\/1\.1 417/);
      const after = await scrape();
      expect(sample(after, series(431)) - sample(before, series(431))).toBe(1);
      expect(sample(after, series(417)) - sample(before, series(417))).toBe(1);
    });

    it('moves as expected after a call, a denial and an approval', async () => {
      const read = 'tool_calls_total{capability="fx-exec-tools",tool="fx-exec-read",outcome="succeeded",reason=""}';
      const invalid = 'tool_calls_total{capability="fx-exec-tools",tool="fx-exec-read",outcome="denied",reason="invalid_arguments"}';
      const unknown = 'tool_calls_total{capability="none",tool="none",outcome="denied",reason="unknown_tool"}';
      const pending = 'tool_calls_total{capability="fx-exec-tools",tool="fx-exec-write",outcome="pending_approval",reason=""}';
      const written = 'tool_calls_total{capability="fx-exec-tools",tool="fx-exec-write",outcome="succeeded",reason=""}';
      const before = await scrape();
      expect(sample(before, 'approvals_pending')).toBe(0);

      await callTool({ tool: 'fx-exec-read', arguments: { query: 'x' } }).expect(200);
      let now = await scrape();
      expect(sample(now, read)).toBe(sample(before, read) + 1);
      expect(sample(now, 'tool_call_duration_seconds_count{capability="fx-exec-tools",tool="fx-exec-read",outcome="succeeded"}')).toBe(
        sample(before, 'tool_call_duration_seconds_count{capability="fx-exec-tools",tool="fx-exec-read",outcome="succeeded"}') + 1,
      );

      await callTool({ tool: 'fx-exec-read', arguments: { query: 42 } }).expect(422);
      await callTool({ tool: 'no_such_tool_' + 'q'.repeat(30), arguments: {} }).expect(404);
      now = await scrape();
      expect(sample(now, invalid)).toBe(sample(before, invalid) + 1);
      expect(sample(now, unknown)).toBe(sample(before, unknown) + 1);
      expect(now).not.toContain('qqqq');

      const asked = await callTool({ tool: 'fx-exec-write', arguments: { tag: 'obs' } }).expect(202);
      // The pending-approvals figure is read from the database at most every 2 s, however often scraped.
      now = await until(scrape, (text) => sample(text, 'approvals_pending') === 1, 10_000, 250);
      expect(sample(now, pending)).toBe(sample(before, pending) + 1);
      expect(sample(now, 'approvals_pending')).toBe(1);
      expect(sample(now, 'approvals_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);

      await t.http
        .post(`/api/v1/approvals/${asked.body.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(200);
      now = await until(scrape, (text) => sample(text, 'approvals_pending') === 0, 10_000, 250);
      expect(sample(now, 'approvals_pending')).toBe(0);
      expect(sample(now, written)).toBe(sample(before, written) + 1);
      expect(sample(now, 'approval_decision_seconds_count{decision="approved"}')).toBe(
        sample(before, 'approval_decision_seconds_count{decision="approved"}') + 1,
      );
    });
  });

  describe('traces', () => {
    const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) => spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

    it('record one execute_tool span per call with the GenAI attributes, and the guards and the tool under it', async () => {
      exporter.reset();
      const res = await callTool({ tool: 'fx-exec-read', arguments: { query: 'traced' }, runId: 'run-obs' }).expect(200);
      const root = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool fx-exec-read')!;
      expect(root).toBeDefined();
      expect(root.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'fx-exec-read',
        'gen_ai.tool.call.id': res.body.id,
        'cp.org.id': org.id,
        'cp.agent.id': agentId,
        'cp.agent.version': '1',
        'cp.capability.id': 'fx-exec-tools',
        'cp.tool.id': 'fx-exec-read',
        'cp.entry_point': 'rest',
        'cp.run.id': 'run-obs',
        'cp.tool_call.status': 'succeeded',
      });
      const spans = spansOf(root.spanContext().traceId);
      // One span for the guards, each guard passed named in it, in order (no run budget applies to
      // this agent); then the tool, after the guards.
      expect(childrenOf(spans, root).map((s) => s.name)).toEqual(['guards', 'tool fx-exec-tools/fx-exec-read']);
      const guards = spans.find((s) => s.name === 'guards')!;
      expect(guards.attributes['cp.guards.passed']).toEqual(['tool_offered', 'tool_policy', 'arguments']);
      // The guards end before the tool starts. A span's start is Date.now() (whole
      // milliseconds) and its end from that plus a precise duration, so one span's end and another's
      // start compare only to the millisecond. BigInt: seconds * 1e9 as a double loses nanoseconds.
      const nanos = (t: [number, number]) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
      expect(nanos(guards.endTime)).toBeLessThanOrEqual(nanos(spans.find((s) => s.name.startsWith('tool '))!.startTime) + 1_000_000n);
      // The tool's span says how the run ended; the call, capability and tool are its parent's.
      const tool = spans.find((s) => s.name === 'tool fx-exec-tools/fx-exec-read')!;
      expect(tool.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
      expect(tool.attributes).toEqual({ 'cp.tool_call.status': 'succeeded' });
    });

    it("are recorded by the product's own tracer provider, which hands them to the processors as the SDK's spans", () => {
      // recording-tracer.spec.ts compares it with the SDK's; this says it is the one in use.
      expect((trace.getTracerProvider() as ProxyTracerProvider).getDelegate()).toBeInstanceOf(RecordingTracerProvider);
      exporter.reset();
      trace.getTracer('test').startSpan('plain').end();
      expect(exporter.getFinishedSpans()[0]).toBeInstanceOf(RecordedSpan);
    });

    it('cut attribute values to a bounded length when the operator sets no limit (a batched statement is kilobytes of SQL)', () => {
      exporter.reset();
      trace
        .getTracer('test')
        .startSpan('long', { attributes: { 'db.query.text': 'x'.repeat(8000), short: 'kept' } })
        .end();
      const [span] = exporter.getFinishedSpans();
      expect(span.attributes['db.query.text']).toBe('x'.repeat(DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT));
      expect(span.attributes.short).toBe('kept');
    });

    it("mark a refused call with the guard's code, and trace the approved run as the call's execution", async () => {
      exporter.reset();
      await callTool({ tool: 'fx-exec-read', arguments: { query: 7 } }).expect(422);
      const refused = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool fx-exec-read')!;
      expect(refused.attributes['error.type']).toBe('invalid_arguments');
      expect(refused.status.code).toBe(2);
      // The guards' span says which refused (its code) and which passed before it.
      const refusedGuards = childrenOf(spansOf(refused.spanContext().traceId), refused);
      expect(refusedGuards.map((s) => s.name)).toEqual(['guards']);
      expect(refusedGuards[0].attributes).toMatchObject({ 'error.type': 'invalid_arguments', 'cp.guards.passed': ['tool_offered', 'tool_policy'] });

      const asked = await callTool({ tool: 'fx-exec-write', arguments: { tag: 'traced' } }).expect(202);
      const gate = exporter.getFinishedSpans().find((s) => s.name === 'approval gate')!;
      expect(gate.attributes['cp.approval.reason']).toBe('side_effecting');
      exporter.reset();
      await t.http
        .post(`/api/v1/approvals/${asked.body.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(200);
      const run = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool fx-exec-write')!;
      expect(run.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.id': asked.body.id, 'cp.entry_point': 'approval' });
      const runChildren = childrenOf(spansOf(run.spanContext().traceId), run);
      expect(runChildren.map((s) => s.name)).toEqual(expect.arrayContaining(['guards', 'tool fx-exec-tools/fx-exec-write']));
      expect(runChildren.find((s) => s.name === 'guards')!.attributes['cp.guards.passed']).toEqual(['tool_offered', 'tool_policy', 'arguments']);
    });
  });
});
