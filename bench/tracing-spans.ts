import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, SpanProcessor } from '@opentelemetry/sdk-trace';
import { randomUUID } from 'node:crypto';
import { EncodeOnEndSpanProcessor } from '../src/telemetry/encode-on-end';
import { RecordingTracerProvider } from '../src/telemetry/recording-tracer';

/**
 * What recording and encoding the spans of one read-only tool call costs, alone in a process: the
 * request span (@fastify/otel's), `execute_tool`, `guards`, `tool` and one statement, with the
 * attributes the server gives them, made active as the server makes them, through the product's
 * recorder and encode-on-end processor (the export itself is left out: nothing is sent).
 *
 *   node -r @swc-node/register bench/tracing-spans.ts [encode|record|unsampled|off]
 *
 * `encode` records and encodes every span, `record` records them and drops them at their end,
 * `unsampled` makes them as a trace the sampler left out (parent-based, its root not sampled: the
 * nine traces in ten that `parentbased_traceidratio` at 0.1 does not record), `off` runs the same
 * calls with no tracer provider (the API's no-op spans): the skeleton. Prints
 * µs a call for five rounds of 50,000 calls after 20,000 of warm-up; compare the lowest figures of
 * two builds run one after the other. In the server under load the same work costs several times
 * more (caches shared with the database and the load generator), so this ranks levers; the server's
 * own figures come from bench:compare and bench:variants (docs/benchmarks.md).
 */
const mode = process.argv[2] ?? 'encode';
if (!['encode', 'record', 'unsampled', 'off'].includes(mode)) throw new Error('mode: encode, record, unsampled or off');
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
let ended = 0;
const drop: SpanProcessor = { onStart: () => undefined, onEnd: () => void ended++, forceFlush: async () => undefined, shutdown: async () => undefined };
if (mode !== 'off') {
  const processor = mode === 'encode' ? new EncodeOnEndSpanProcessor(drop) : drop;
  const resource = resourceFromAttributes({ 'service.name': 'capability-platform', 'host.name': 'bench', 'process.pid': process.pid });
  trace.setGlobalTracerProvider(
    new RecordingTracerProvider({
      resource,
      sampler: new ParentBasedSampler({ root: mode === 'unsampled' ? new AlwaysOffSampler() : new AlwaysOnSampler() }),
      spanLimits: { attributeValueLengthLimit: 1024 },
      spanProcessors: [processor],
    }),
  );
}
const fastify = trace.getTracer('@fastify/otel', '0.21.2');
const pg = trace.getTracer('@opentelemetry/instrumentation-pg', '0.76.0');
const ours = trace.getTracer('capability-platform');
const sql =
  'SELECT "c"."id" AS "c_id", "c"."organization_id" AS "c_organization_id", "c"."status" AS "c_status", "c"."created_at" AS "c_created_at" ' +
  'FROM "tool_call" "c" WHERE "c"."organization_id" = $1 AND "c"."idempotency_key" = $2 LIMIT 1';
const org = randomUUID();
const agent = randomUUID();

async function call(): Promise<void> {
  const request = fastify.startSpan('request', {
    kind: SpanKind.SERVER,
    attributes: {
      'fastify.root': '@fastify/otel',
      'http.request.method': 'POST',
      'url.path': `/api/v1/agents/${agent}/tool-calls`,
      'http.route': '/api/v1/agents/:agentId/tool-calls',
    },
  });
  request.updateName('POST /api/v1/agents/:agentId/tool-calls');
  await context.with(trace.setSpan(context.active(), request), () =>
    ours.startActiveSpan(
      'execute_tool skills_search',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'skills_search',
          'gen_ai.tool.type': 'function',
          'cp.org.id': org,
          'cp.agent.id': agent,
          'cp.agent.version': '3',
          'cp.entry_point': 'rest',
          'gen_ai.tool.call.id': randomUUID(),
        },
      },
      async (span) => {
        await ours.startActiveSpan('guards', async (guards) => {
          guards.setAttribute('cp.guards.passed', ['scope', 'budget', 'rate', 'approval']);
          guards.end();
        });
        await ours.startActiveSpan('tool', async (tool) => {
          const attributes = {
            'db.system.name': 'postgresql',
            'db.namespace': 'test',
            'server.port': 5432,
            'server.address': '127.0.0.1',
            'db.query.text': sql,
            'db.operation.name': 'SELECT',
          };
          pg.startSpan('pg.query:SELECT test', { kind: SpanKind.CLIENT, attributes }).end();
          tool.end();
        });
        span.end();
      },
    ),
  );
  request.setAttributes({ 'http.response.status_code': 200 });
  request.end();
}

async function main(): Promise<void> {
  for (let i = 0; i < 20_000; i++) await call();
  for (let round = 0; round < 5; round++) {
    const calls = 50_000;
    const start = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await call();
    process.stdout.write(`${mode}: ${(Number(process.hrtime.bigint() - start) / calls / 1000).toFixed(2)} µs a call\n`);
  }
  const expected = mode === 'encode' || mode === 'record' ? 270_000 * 5 : 0;
  if (ended !== expected) throw new Error(`${ended} spans ended, ${expected} expected`);
}
void main();
