import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { readFileSync } from 'node:fs';
import { encodeTraceExportRequest, protobufTraceSerializer } from '../src/telemetry/otlp-trace-encoder';

/**
 * How long the OTLP/protobuf serializer takes for one export of 512 spans shaped like a traced
 * tool call's (bench/results' traces: a SERVER span, execute_tool, guards, tool, and a share of
 * the SQL statements), by @opentelemetry/otlp-transformer as it ships and by the product's encoder.
 *
 *   node -r @swc-node/register bench/otlp-serialize.ts
 */
const SQL = readFileSync(require.resolve('../src/auth/api-keys.repository.ts'), 'utf8').match(/`(SELECT q\.i[\s\S]*?)`/)![1];

function callSpans(calls: number): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('bench');
  for (let i = 0; i < calls; i++) {
    const id = `1756119a-a6dd-4a06-92f3-48475757${String(i).padStart(4, '0')}`;
    tracer
      .startSpan('POST /api/v1/agents/:agentId/tool-calls', {
        attributes: {
          'fastify.root': '@fastify/otel',
          'http.request.method': 'POST',
          'url.path': `/api/v1/agents/${id}/tool-calls`,
          'http.route': '/api/v1/agents/:agentId/tool-calls',
          'http.response.status_code': 200,
        },
      })
      .end();
    tracer
      .startSpan('execute_tool list_skills', {
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'list_skills',
          'gen_ai.tool.type': 'function',
          'cp.org.id': id,
          'cp.agent.id': id,
          'cp.agent.version': '1',
          'cp.entry_point': 'rest',
          'cp.capability.id': 'skills',
          'cp.tool.id': 'list_skills',
          'cp.tool_call.status': 'succeeded',
          'gen_ai.tool.call.id': id,
        },
      })
      .end();
    tracer.startSpan('guards', { attributes: { 'cp.guards.passed': ['tool_offered', 'tool_policy', 'arguments'] } }).end();
    tracer.startSpan('tool skills/list_skills', { attributes: { 'cp.tool_call.status': 'succeeded' } }).end();
    if (i % 4 !== 3) {
      tracer
        .startSpan('pg.query:SELECT bench', {
          attributes: { 'db.system.name': 'postgresql', 'db.namespace': 'bench', 'server.address': '127.0.0.1', 'server.port': 5432, 'db.query.text': SQL },
        })
        .end();
    }
  }
  return exporter.getFinishedSpans();
}

function timePerExport(serialize: () => unknown, ms = 2000): number {
  for (let i = 0; i < 50; i++) serialize();
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(ms) * 1_000_000n;
  let now = start;
  while (now < until) {
    serialize();
    n++;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / 1e6 / n;
}

const serializer = protobufTraceSerializer()!;
const spans = callSpans(110).slice(0, 512);
const calls = 512 / 4.75;
const rounds: { library: number; encoder: number }[] = [];
for (let round = 0; round < 5; round++) {
  const a = timePerExport(() => serializer.serializeRequest(spans));
  const b = timePerExport(() => encodeTraceExportRequest(spans));
  rounds.push({ library: a, encoder: b });
}
const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const lib = median(rounds.map((r) => r.library));
const enc = median(rounds.map((r) => r.encoder));
const bytes = Buffer.from(serializer.serializeRequest(spans)!);
if (!Buffer.from(encodeTraceExportRequest(spans)).equals(bytes)) throw new Error("the encoder does not write the library's bytes");
const line = (label: string, ms: number) => console.log(`  ${label.padEnd(34)} ${ms.toFixed(3)} ms (${((ms * 1000) / calls).toFixed(1)} µs per call)`);
console.log(`one export of 512 spans (${bytes.length} bytes), median of 5 interleaved rounds:`);
line('@opentelemetry/otlp-transformer:', lib);
line('src/telemetry/otlp-trace-encoder:', enc);
console.log(`  the encoder: ${(lib / enc).toFixed(2)} times the library's speed`);
