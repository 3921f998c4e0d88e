import { ROOT_CONTEXT, SpanKind, TraceFlags } from '@opentelemetry/api';
import { BasicTracerProvider, ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { spawn } from 'node:child_process';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { decodeTraceExportRequest, DecodedSpan } from '../../test/support/otlp-protobuf';
import { EncodeOnEndSpanProcessor, encodeOnEndProcessorsFromEnv } from './encode-on-end';
import { EncodedSpan, protobufTraceSerializer, useFastOtlpTraceEncoding } from './otlp-trace-encoder';

/** A processor that keeps what it is handed. */
function keeping(): SpanProcessor & { ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  return { ended, onStart: () => undefined, onEnd: (s) => void ended.push(s), forceFlush: async () => undefined, shutdown: async () => undefined };
}

describe('EncodeOnEndSpanProcessor', () => {
  const library = protobufTraceSerializer()!;
  beforeAll(() => expect(useFastOtlpTraceEncoding()).toBe(true));

  it('hands the next processor each sampled span encoded, as the export will write it', () => {
    const next = keeping();
    const provider = new BasicTracerProvider({ spanProcessors: [new EncodeOnEndSpanProcessor(next)] });
    const tracer = provider.getTracer('encode-on-end.spec', '1');
    const span = tracer.startSpan('GET /x', { kind: SpanKind.SERVER, attributes: { 'http.route': '/x' } });
    const child = tracer.startSpan('child', {}, ROOT_CONTEXT);
    child.end();
    span.end();
    expect(next.ended).toHaveLength(2);
    expect(next.ended.every((e) => e instanceof EncodedSpan)).toBe(true);
    expect(next.ended.map((e) => e.spanContext())).toEqual([child.spanContext(), span.spanContext()]);
    // The exporter's serializer (the product's encoder, in place of the library's) writes them out.
    const sent = decodeTraceExportRequest(Buffer.from(library.serializeRequest(next.ended)!));
    expect(sent.map((s) => [s.name, s.kind, s.scope, s.spanId])).toEqual([
      ['child', SpanKind.INTERNAL + 1, 'encode-on-end.spec', child.spanContext().spanId],
      ['GET /x', SpanKind.SERVER + 1, 'encode-on-end.spec', span.spanContext().spanId],
    ]);
    expect(sent[1].attributes).toEqual([{ key: 'http.route', value: { stringValue: '/x' } }]);
  });

  it('passes on no span that is not sampled, and none after shutdown', async () => {
    const next = keeping();
    const processor = new EncodeOnEndSpanProcessor(next);
    const unsampled = { spanContext: () => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.NONE }) } as ReadableSpan;
    processor.onEnd(unsampled);
    expect(next.ended).toHaveLength(0);
    const tracer = new BasicTracerProvider({ spanProcessors: [processor] }).getTracer('t');
    await processor.shutdown();
    tracer.startSpan('late').end();
    expect(next.ended).toHaveLength(0);
  });

  it('never fails the code that ends a span: a span it cannot encode goes on as it is', () => {
    const next = keeping();
    const processor = new EncodeOnEndSpanProcessor(next);
    const broken = {
      spanContext: () => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.SAMPLED }),
      get name(): string {
        throw new Error('a span processor before this one broke the span');
      },
    } as unknown as ReadableSpan;
    expect(() => processor.onEnd(broken)).not.toThrow();
    expect(next.ended).toEqual([broken]);
  });
});

describe('the span processors made from OTEL_* for the default OTLP export', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) delete process.env[k];
    Object.assign(process.env, saved);
  });
  const only = (env: Record<string, string>) => {
    for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) delete process.env[k];
    Object.assign(process.env, env);
    return encodeOnEndProcessorsFromEnv();
  };

  it("are the SDK's own for every other exporter or protocol", () => {
    expect(only({ OTEL_TRACES_EXPORTER: 'console' })).toBeUndefined();
    expect(only({ OTEL_TRACES_EXPORTER: 'zipkin' })).toBeUndefined();
    expect(only({ OTEL_TRACES_EXPORTER: 'otlp,console' })).toBeUndefined();
    expect(only({ OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(only({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeUndefined();
    expect(only({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toBeUndefined();
  });

  it('encode on end for OTLP over http/protobuf (the default) and gRPC', async () => {
    for (const env of [
      {},
      { OTEL_TRACES_EXPORTER: 'otlp' },
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' },
    ] as Record<string, string>[]) {
      const processors = only({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
      expect(processors).toHaveLength(1);
      expect(processors![0]).toBeInstanceOf(EncodeOnEndSpanProcessor);
      await processors![0].shutdown();
    }
  });

  describe('sending to a collector', () => {
    let collector: Server;
    const exports: DecodedSpan[][] = [];
    beforeAll(async () => {
      collector = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          exports.push(decodeTraceExportRequest(Buffer.concat(chunks)));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        });
      });
      await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise((resolve) => collector.close(resolve)));

    it('batch as OTEL_BSP_* says, and export what each span was when it ended', async () => {
      const { port } = collector.address() as AddressInfo;
      const child = spawn(process.execPath, ['-r', '@swc-node/register', 'test/support/encode-on-end-child.ts'], {
        cwd: join(__dirname, '..', '..'),
        env: {
          PATH: process.env.PATH,
          SPANS: '7',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '3',
          OTEL_BSP_SCHEDULE_DELAY: '600000',
        },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const lines = createInterface({ input: child.stdout! });
      const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
      expect(await next()).toBe('ended');
      for (let i = 0; i < 200 && exports.flat().length < 6; i++) await new Promise((r) => setTimeout(r, 25));
      // Two full batches of three; the seventh waits for the schedule (ten minutes) or a flush.
      expect(exports.map((e) => e.length)).toEqual([3, 3]);
      child.stdin!.write('flush\n');
      expect(await next()).toBe('flushed');
      await new Promise((resolve) => child.once('exit', resolve));
      expect(exports.map((e) => e.length)).toEqual([3, 3, 1]);
      expect(exports.flat().map((s) => s.name)).toEqual(Array.from({ length: 7 }, (_, i) => `span ${i}`));
      expect(exports.flat().map((s) => s.attributes)).toEqual(Array.from({ length: 7 }, (_, i) => [{ key: 'i', value: { intValue: String(i) } }]));
    });
  });
});
