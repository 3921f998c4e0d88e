import { mkdtempSync } from 'node:fs';
import { createServer, IncomingMessage, request as httpRequest, Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DecodedSpan, decodeTraceExportRequest } from './support/otlp-protobuf';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { TestIdentityProvider } from './support/oidc-provider';
import { startScriptedModel } from './support/scripted-model';
import { until } from './support/until';

/**
 * Tracing as an operator turns it on: the server process started with the standard OTEL_*
 * variables, exporting OTLP (the default, http/protobuf: the product's own encoder) to a collector
 * this test plays. One request with the
 * caller's `traceparent` is one trace: the request's server span (made by the Fastify
 * instrumentation), the tool call's span, its guards and its database queries; the request's log
 * lines carry the trace id.
 */
jest.setTimeout(300_000);

/** A span as the collector got it, whichever protocol carried it. */
type OtlpSpan = DecodedSpan;

/** A collector this test plays and a server process exporting to it, started before a describe's tests. */
interface TracedServer {
  server: ServerProcess;
  /** Every span the collector got, in the order it got them. */
  received: OtlpSpan[];
  contentTypes: Set<string>;
}

const adminToken = 'cpa_trace_' + 'z'.repeat(24);

function tracedServer(env: Record<string, string> | (() => Record<string, string>)): TracedServer {
  const t = { received: [], contentTypes: new Set<string>() } as unknown as TracedServer;
  let collector: Server;
  beforeAll(async () => {
    collector = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const json = String(req.headers['content-type']).includes('json');
        if (req.url === '/v1/traces') {
          t.contentTypes.add(String(req.headers['content-type']));
          const body = Buffer.concat(chunks);
          if (json) {
            const doc = JSON.parse(body.toString()) as { resourceSpans: { scopeSpans: { scope?: { name: string }; spans: OtlpSpan[] }[] }[] };
            for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) t.received.push(...ss.spans.map((s) => ({ ...s, scope: ss.scope?.name })));
          } else {
            t.received.push(...decodeTraceExportRequest(body));
          }
        }
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { port } = collector.address() as AddressInfo;
    t.server = await startServerProcess(
      {
        DATA_DIR: mkdtempSync(join(tmpdir(), 'cp-trace-')),
        PLATFORM_ADMIN_TOKEN: adminToken,
        LOG_LEVEL: 'info',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_SERVICE_NAME: 'cp-trace-test',
        ...(typeof env === 'function' ? env() : env),
      },
      'test/support/fixture-server.ts',
    );
  });
  afterAll(async () => {
    if (t.server) await stopServerProcess(t.server);
    if (collector) await new Promise((resolve) => collector.close(resolve));
  });
  return t;
}

const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};
const isQuery = (s: OtlpSpan) => attr(s, 'db.system') === 'postgresql' || attr(s, 'db.system.name') === 'postgresql';
/** The spans of one trace, once `until` holds of them (or after ten seconds). */
async function spansOf(t: TracedServer, traceId: string, until: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  for (let i = 0; i < 100; i++) {
    const spans = t.received.filter((s) => s.traceId === traceId);
    if (until(spans)) return spans;
    await new Promise((r) => setTimeout(r, 100));
  }
  return t.received.filter((s) => s.traceId === traceId);
}
const descends = (spans: OtlpSpan[], span: OtlpSpan, ancestor: OtlpSpan): boolean => {
  for (let s: OtlpSpan | undefined = span; s; s = spans.find((p) => p.spanId === s!.parentSpanId)) if (s.spanId === ancestor.spanId) return true;
  return false;
};

/** An organization with one key per role asked for, through the server's own API. */
async function orgWithKeys(t: TracedServer, slug: string, roles: string[], scopes: string[] = []): Promise<{ id: string; keys: Record<string, string> }> {
  const http = request(t.server.url);
  const org = (
    await http
      .post('/api/v1/orgs')
      .set(...as(adminToken))
      .send({ slug, name: slug, scopes })
      .expect(201)
  ).body;
  const keys: Record<string, string> = {};
  for (const role of roles) {
    keys[role] = (
      await http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as(adminToken))
        .send({ name: role, roles: [role] })
        .expect(201)
    ).body.token;
  }
  return { id: org.id, keys };
}

/** An agent with this draft, published; answers its id. */
async function publishedAgent(t: TracedServer, builder: string, slug: string, draft: object): Promise<string> {
  const http = request(t.server.url);
  const a = (
    await http
      .post('/api/v1/agents')
      .set(...as(builder))
      .send({ slug, name: slug })
      .expect(201)
  ).body;
  await http
    .put(`/api/v1/agents/${a.id}/draft`)
    .set(...as(builder))
    .send(draft)
    .expect(200);
  await http
    .post(`/api/v1/agents/${a.id}/publish`)
    .set(...as(builder))
    .expect(201);
  return a.id;
}

describe('traces exported over OTLP by the server process', () => {
  const t = tracedServer({ EGRESS_ALLOWED_HOSTS: '127.0.0.1' });
  const received = t.received;
  let vendor: FixtureMcpServer;
  beforeAll(async () => {
    vendor = await startFixtureMcpServer();
  });
  afterAll(async () => {
    await vendor?.close();
  });

  it("continues the caller's trace through the server span, the tool call, its guards and its queries, and logs its id", async () => {
    const http = request(t.server.url);
    const org = await orgWithKeys(t, 'traced', ['builder', 'agent', 'approver']);
    const { builder, agent, approver } = org.keys;
    const agentId = await publishedAgent(t, builder, 'traced', { instructions: 'x', capabilities: [{ id: 'fx-crash' }] });

    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const res = await http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as(agent))
      .set('traceparent', `00-${traceId}-${callerSpanId}-01`)
      .send({ tool: 'fx_crash_effect', arguments: { tag: 'traced', ms: 1 } })
      .expect(202);

    const spans = await spansOf(t, traceId, (s) => s.some((x) => x.name === 'execute_tool fx_crash_effect') && s.some(isQuery) && s.some((x) => x.kind === 2));
    // One span for the request (not one from node:http and another from Fastify), named by its route.
    const serverSpans = spans.filter((s) => s.kind === 2);
    expect(serverSpans).toHaveLength(1);
    const serverSpan = serverSpans[0];
    expect(serverSpan.scope).toBe('@fastify/otel');
    expect(serverSpan.name).toBe('POST /api/v1/agents/:agentId/tool-calls');
    expect(attr(serverSpan, 'http.route')).toBe('/api/v1/agents/:agentId/tool-calls');
    expect(attr(serverSpan, 'http.request.method')).toBe('POST');
    expect(Number(attr(serverSpan, 'http.response.status_code'))).toBe(202);
    // The caller's span is the parent: one trace end to end.
    expect(serverSpan.parentSpanId).toBe(callerSpanId);
    const call = spans.find((s) => s.name === 'execute_tool fx_crash_effect')!;
    expect(attr(call, 'gen_ai.operation.name')).toBe('execute_tool');
    expect(attr(call, 'gen_ai.tool.call.id')).toBe(res.body.id);
    expect(attr(call, 'cp.org.id')).toBe(org.id);
    expect(descends(spans, call, serverSpan)).toBe(true);
    const guards = spans.find((s) => s.name === 'guards')!;
    expect(guards.parentSpanId).toBe(call.spanId);
    expect((attr(guards, 'cp.guards.passed') as { values: { stringValue: string }[] }).values.map((v) => v.stringValue)).toEqual([
      'tool_offered',
      'tool_policy',
      'arguments',
    ]);
    const queries = spans.filter(isQuery);
    expect(queries.some((q) => descends(spans, q, call))).toBe(true);

    const logged = t.server
      .output()
      .split('\n')
      .filter((l) => l.includes(`"trace_id":"${traceId}"`));
    expect(logged.find((l) => l.includes('"msg":"request completed"'))).toBeDefined();
    // Once per line: the trace is the request's, bound when its logger is made.
    for (const line of logged) expect(line.split('"trace_id"').length).toBe(2);

    // Approving runs the tool in the approver's request: a line the tool writes to the server's
    // log carries that request (the logger's context survives the tracer's).
    const approvalTrace = randomBytes(16).toString('hex');
    await http
      .post(`/api/v1/approvals/${res.body.approvalId}/approve`)
      .set(...as(approver))
      .set('traceparent', `00-${approvalTrace}-${randomBytes(8).toString('hex')}-01`)
      .send({})
      .expect(200);
    const lines = () =>
      t.server
        .output()
        .split('\n')
        .filter((l) => l.includes(`"trace_id":"${approvalTrace}"`));
    const both = () => lines().some((l) => l.includes('fx_crash_effect started: traced')) && lines().some((l) => l.includes('"msg":"request completed"'));
    for (let i = 0; i < 50 && !both(); i++) await new Promise((r) => setTimeout(r, 100));
    const fromTool = lines().find((l) => l.includes('fx_crash_effect started: traced'));
    const completed = lines().find((l) => l.includes('"msg":"request completed"'));
    expect(fromTool).toBeDefined();
    expect((JSON.parse(fromTool!) as { req: { id: string } }).req.id).toBe((JSON.parse(completed!) as { req: { id: string } }).req.id);

    // A body that arrives in parts is read in the socket's later events, after the Fastify
    // instrumentation entered the request's trace: the handler still runs in that trace.
    const partsTrace = randomBytes(16).toString('hex');
    const body = JSON.stringify({ tool: 'fx_crash_effect', arguments: { tag: 'in-parts', ms: 1 } });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${t.server.url}/api/v1/agents/${agentId}/tool-calls`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          traceparent: `00-${partsTrace}-${callerSpanId}-01`,
        },
      });
      req.on('response', (r) => {
        r.resume();
        r.on('end', () => resolve(r.statusCode ?? 0));
      });
      req.on('error', reject);
      req.flushHeaders();
      req.write(body.slice(0, 10));
      setTimeout(() => req.end(body.slice(10)), 100);
    });
    expect(status).toBe(202);
    const parts = await spansOf(t, partsTrace, (x) => x.some((y) => y.name === 'execute_tool fx_crash_effect') && x.some((y) => y.kind === 2));
    const partsCall = parts.find((x) => x.name === 'execute_tool fx_crash_effect');
    expect(partsCall).toBeDefined();
    expect(
      descends(
        parts,
        partsCall!,
        parts.find((x) => x.kind === 2)!,
      ),
    ).toBe(true);
  });

  it("follows a tool call into a vendor's MCP server: a CLIENT span under the call, its traceparent sent on (sampled or not, as the caller's), the URL's secrets not exported", async () => {
    const http = request(t.server.url);
    const { admin, builder, agent } = (await orgWithKeys(t, 'traced-mcp', ['admin', 'builder', 'agent'], ['mcp:remote'])).keys;
    const connection = (
      await http
        .post('/api/v1/mcp-connections')
        .set(...as(admin))
        .send({ server: 'remote', name: 'vendor', url: `${vendor.url}?api_key=query-secret-555` })
        .expect(201)
    ).body;
    // A vendor's own annotations are not trusted: the admin decides the tool is read-only.
    await http
      .put(`/api/v1/mcp-connections/${connection.id}/tools/lookup/risk`)
      .set(...as(admin))
      .send({ risk: 'read_only' })
      .expect(200);
    const agentId = await publishedAgent(t, builder, 'traced-mcp', {
      instructions: 'x',
      capabilities: [],
      mcpServers: [{ connection: connection.id, tools: ['lookup'] }],
    });

    /** Calls the vendor's `lookup` in the caller's trace; answers the `traceparent`s the vendor got. */
    async function lookup(id: string, traceparent: string): Promise<(string | undefined)[]> {
      const before = vendor.traceparents.length;
      await http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as(agent))
        .set('traceparent', traceparent)
        .send({ tool: 'lookup', arguments: { id } })
        .expect(200);
      return vendor.traceparents.slice(before);
    }

    const traceId = randomBytes(16).toString('hex');
    const sent = await lookup('c-1', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    // An outgoing HTTP request's span (a database query's is a CLIENT span too).
    const isHttpClient = (s: OtlpSpan) => s.kind === 3 && s.scope === '@opentelemetry/instrumentation-undici';
    const spans = await spansOf(t, traceId, (s) => s.some((x) => x.name === 'execute_tool lookup') && s.filter(isHttpClient).length >= sent.length);
    const call = spans.find((s) => s.name === 'execute_tool lookup')!;
    expect(call).toBeDefined();
    const clients = spans.filter(isHttpClient);
    expect(clients.length).toBeGreaterThan(0);
    for (const client of clients) {
      expect(client.name).toBe('POST');
      expect(descends(spans, client, call)).toBe(true);
      expect(attr(client, 'url.full')).toBe(`${vendor.url}?api_key=REDACTED`);
    }
    // Each request the vendor got carries this trace, its parent the CLIENT span that sent it.
    expect(sent.length).toBeGreaterThan(0);
    for (const header of sent) {
      const [, trace, parent] = header!.split('-');
      expect(trace).toBe(traceId);
      expect(clients.map((c) => c.spanId)).toContain(parent);
    }
    expect(JSON.stringify(received)).not.toContain('query-secret-555');

    // A caller that does not sample its trace (flags 00): the vendor still gets the trace, unsampled,
    // under a span id of this server's (its spans are made, not recorded), and nothing of it is
    // exported.
    const unsampled = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const forwarded = await lookup('c-2', `00-${unsampled}-${callerSpan}-00`);
    expect(forwarded.length).toBeGreaterThan(0);
    for (const header of forwarded) {
      const [version, trace, parent, flags] = header!.split('-');
      expect([version, trace, flags]).toEqual(['00', unsampled, '00']);
      expect(parent).toMatch(/^[0-9a-f]{16}$/);
      expect(parent).not.toBe(callerSpan);
    }
    // A sampled request made after it is exported: had the unsampled one been, it would be too.
    const after = randomBytes(16).toString('hex');
    await lookup('c-3', `00-${after}-${randomBytes(8).toString('hex')}-01`);
    expect((await spansOf(t, after, (s) => s.some((x) => x.name === 'execute_tool lookup'))).length).toBeGreaterThan(0);
    expect(received.filter((s) => s.traceId === unsampled)).toEqual([]);
  });

  it("sends none of a caller's trace headers with webhook deliveries, its own organization's or another's (attack round 22, AH-F1)", async () => {
    // A delivery is started by whichever request's commit woke the dispatcher, and a round claims
    // every organization's due deliveries: they went out in that request's context, carrying its
    // caller's traceparent, tracestate and baggage (any header it chose) to another organization's
    // receiver, as spans of the caller's trace.
    const heard: { org: string; headers: IncomingMessage['headers'] }[] = [];
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        heard.push({ org: String(req.url).slice(1), headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const http = request(t.server.url);
      const { port } = receiver.address() as AddressInfo;
      const a = await orgWithKeys(t, 'traced-hooks-a', ['admin']);
      const b = await orgWithKeys(t, 'traced-hooks-b', ['admin']);
      for (const [name, org] of [
        ['a', a],
        ['b', b],
      ] as const) {
        await http
          .post('/api/v1/webhooks')
          .set(...as(org.keys.admin))
          .send({ url: `http://127.0.0.1:${port}/${name}`, types: ['*'] })
          .expect(201);
      }
      await new Promise((r) => setTimeout(r, 500));
      heard.length = 0;
      const traceId = randomBytes(16).toString('hex');
      for (let i = 0; i < 3; i++) {
        // Organization b's event lands within the dispatcher's coalescing of a's wake-up.
        await Promise.all([
          http
            .post('/api/v1/webhooks')
            .set(...as(a.keys.admin))
            .set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`)
            .set('tracestate', 'orga=chosen')
            .set('baggage', 'injected-by-a=for-b')
            .send({ url: `http://127.0.0.1:${port}/a-more-${i}`, types: ['*'] })
            .expect(201),
          new Promise((r) => setTimeout(r, 5)).then(() =>
            http
              .post('/api/v1/webhooks')
              .set(...as(b.keys.admin))
              .send({ url: `http://127.0.0.1:${port}/b-more-${i}`, types: ['*'] })
              .expect(201),
          ),
        ]);
      }
      await until(
        async () => heard.map((h) => h.org),
        (orgs) => orgs.filter((o) => o === 'a').length >= 3 && orgs.filter((o) => o === 'b').length >= 3,
      );
      for (const h of heard) {
        expect([h.org, h.headers.traceparent, h.headers.tracestate, h.headers.baggage]).toEqual([h.org, undefined, undefined, undefined]);
      }
      // Nor are the deliveries spans of the caller's trace.
      await new Promise((r) => setTimeout(r, 300));
      expect(received.filter((s) => s.traceId === traceId && s.scope === '@opentelemetry/instrumentation-undici')).toEqual([]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("sends none of a caller's trace headers with a run's model calls, made by the node's worker (attack round 22, AH-F1)", async () => {
    const model = await startScriptedModel(() => ({ text: 'done' }));
    try {
      const http = request(t.server.url);
      const { admin, builder, agent } = (await orgWithKeys(t, 'traced-runs', ['admin', 'builder', 'agent'])).keys;
      const provider = (
        await http
          .post('/api/v1/model-providers')
          .set(...as(admin))
          .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
          .expect(201)
      ).body;
      const agentId = await publishedAgent(t, builder, 'traced-runs', {
        instructions: 'x',
        capabilities: [],
        model: { provider: provider.id, name: 'scripted-1' },
      });
      const traceId = randomBytes(16).toString('hex');
      const run = await http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as(agent))
        .set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`)
        .set('baggage', 'chosen-by=the-caller')
        .set('Prefer', 'wait=10')
        .send({ input: 'hi' })
        .expect(201);
      await until(
        async () => (await http.get(`/api/v1/runs/${run.body.id}`).set(...as(agent))).body.status,
        (status) => status === 'succeeded',
      );
      expect(model.headers.length).toBeGreaterThan(0);
      for (const h of model.headers) expect([h.traceparent, h.tracestate, h.baggage]).toEqual([undefined, undefined, undefined]);
      await new Promise((r) => setTimeout(r, 300));
      expect(received.filter((s) => s.traceId === traceId && s.scope === '@opentelemetry/instrumentation-undici')).toEqual([]);
    } finally {
      await model.close();
    }
  });

  it('exported with the default protocol, OTLP/protobuf, which the collector read whole', () => {
    expect(received.length).toBeGreaterThan(0);
    expect([...t.contentTypes]).toEqual(['application/x-protobuf']);
  });
});

describe('a server that leaves an instrumentation out (OTEL_NODE_DISABLED_INSTRUMENTATIONS)', () => {
  // `http` is a name of OpenTelemetry's Node distributions that this server has no instrumentation for.
  const t = tracedServer({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg,http' });

  it('says, as it starts, which name it has no instrumentation for', () => {
    const warning = t.server
      .output()
      .split('\n')
      .find((l) => l.includes('OTEL_NODE_DISABLED_INSTRUMENTATIONS'));
    expect(warning).toBeDefined();
    const line = JSON.parse(warning!) as { level: number; msg: string };
    expect(line.level).toBe(40);
    expect(line.msg).toContain('ignored: http (it has fastify, pg, undici)');
  });

  it('still traces the request, the tool call and its guards, with no span for a statement', async () => {
    const http = request(t.server.url);
    const { builder, agent } = (await orgWithKeys(t, 'untraced-sql', ['builder', 'agent'])).keys;
    const agentId = await publishedAgent(t, builder, 'untraced-sql', { instructions: 'x', capabilities: [{ id: 'fx-crash' }] });
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    await http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as(agent))
      .set('traceparent', `00-${traceId}-${callerSpanId}-01`)
      .send({ tool: 'fx_crash_effect', arguments: { tag: 'untraced-sql', ms: 1 } })
      .expect(202);
    const spans = await spansOf(t, traceId, (s) => s.some((x) => x.name === 'execute_tool fx_crash_effect') && s.some((x) => x.kind === 2));
    const serverSpan = spans.find((s) => s.kind === 2)!;
    expect(serverSpan.parentSpanId).toBe(callerSpanId);
    const call = spans.find((s) => s.name === 'execute_tool fx_crash_effect')!;
    expect(descends(spans, call, serverSpan)).toBe(true);
    expect(spans.find((s) => s.name === 'guards')?.parentSpanId).toBe(call.spanId);
    // The call's queries ran (the call was answered and stored) but made no span; a later export
    // would have carried one, so the test waits past the next batch before it looks.
    await new Promise((r) => setTimeout(r, 300));
    expect(t.received.filter(isQuery)).toEqual([]);
    expect(t.received.some((s) => s.scope === '@opentelemetry/instrumentation-pg')).toBe(false);
  });
});

describe('a server signing people in through an identity provider (attack round 22, AH-F1)', () => {
  let idp: TestIdentityProvider;
  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
  });
  afterAll(async () => {
    await idp?.close();
  });
  const t = tracedServer(() => ({ EGRESS_ALLOWED_HOSTS: '127.0.0.1', OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: idp.audience }));

  it("fetches the provider's keys with none of the trace headers of the stranger whose token asked for them", async () => {
    // Any token naming a key the server does not hold makes it fetch the keys again, in that
    // request: its caller's baggage and trace went to the operator's identity provider.
    const before = idp.headers.length;
    const traceId = randomBytes(16).toString('hex');
    await request(t.server.url)
      .get('/api/v1/me')
      .set('Authorization', `Bearer ${await idp.token({ kid: 'kid-nobody-published' })}`)
      .set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`)
      .set('baggage', 'chosen-by=a-stranger')
      .expect(401);
    const asked = idp.headers.slice(before);
    expect(asked.length).toBeGreaterThan(0);
    for (const h of asked) expect([h.traceparent, h.tracestate, h.baggage]).toEqual([undefined, undefined, undefined]);
    await new Promise((r) => setTimeout(r, 300));
    expect(t.received.filter((s) => s.traceId === traceId && s.scope === '@opentelemetry/instrumentation-undici')).toEqual([]);
  });
});
