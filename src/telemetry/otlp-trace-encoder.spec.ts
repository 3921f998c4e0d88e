import { Attributes, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { AlwaysOnSampler } from '@opentelemetry/sdk-trace';
import { RecordedSpan, RecordingTracerProvider } from './recording-tracer';
import { EncodedSpan, encodeSpan, encodeTraceExportRequest, protobufTraceSerializer, useFastOtlpTraceEncoding } from './otlp-trace-encoder';

const serializer = protobufTraceSerializer()!;
/** The library's own, kept before the encoder replaces it. */
const library = serializer.serializeRequest.bind(serializer);

const ascii = (n: number) => 'SELECT q.i, k.id FROM api_key k WHERE k.token_hash = $1 '.repeat(Math.ceil(n / 50)).slice(0, n);
/** Every kind of string a span carries, around each length the encoder treats differently. */
const STRINGS: string[] = [
  '',
  'x',
  ascii(23),
  ascii(24),
  ascii(127),
  ascii(128),
  ascii(1024),
  ascii(16383),
  ascii(16384),
  'é'.repeat(70),
  'é', // short and not ASCII
  'Grüße aus Köln, 日本語のテキスト, emoji 😀🚀 and more text to pass the threshold',
  `${ascii(40)}\uD800${ascii(10)}`, // a lone high surrogate: U+FFFD, three bytes
  `${ascii(4)}\uD800`, // the same in a short string
  `${ascii(40)}\uDC00`,
  `${ascii(40)}\uD83D`,
  '😀'.repeat(40),
];

function provider(resource = resourceFromAttributes({ 'service.name': 'spec', 'deployment.environment.name': 'test', pid: 42 })) {
  const exporter = new InMemorySpanExporter();
  return { exporter, provider: new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(exporter)] }) };
}

function varied(): ReadableSpan[] {
  const one = provider();
  const two = provider(resourceFromAttributes({ 'service.name': 'other', 'service.version': '1.2.3' }));
  const tracer = one.provider.getTracer('otlp-trace-encoder.spec', '0.0.1');
  const unversioned = one.provider.getTracer('no-version');
  const elsewhere = two.provider.getTracer('elsewhere', '2', { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' });

  STRINGS.forEach((value, i) => {
    const attributes: Attributes = { 'db.query.text': value, [`key.${value.slice(0, 30)}`]: i, list: [value, 'short'] };
    const span = tracer.startSpan(value || 'empty', { attributes, kind: (i % 5) as SpanKind });
    span.addEvent(value, { text: value });
    span.setStatus({ code: SpanStatusCode.ERROR, message: value });
    span.end();
  });
  const remote = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: new TraceState('vendor=value,other=1'),
  };
  const numbers: Attributes = {
    zero: 0,
    small: 7,
    negative: -1,
    big: 2 ** 40,
    huge: 2 ** 62,
    tooBig: 2 ** 64,
    min: -(2 ** 63),
    double: 3.25,
    nan: NaN,
    inf: Infinity,
    yes: true,
    no: false,
    bools: [true, false],
    ints: [1, -2, 2 ** 33],
    doubles: [0.5],
    empty: [],
    '': 'empty key',
    [ascii(300)]: 'a key too long to be kept encoded',
    __proto__: 'prototype-named',
    constructor: 'x',
  };
  const withLinks = tracer.startSpan('linked', {
    attributes: numbers,
    links: [{ context: remote, attributes: { 'link.kind': 'follows' } }, { context: { ...remote, isRemote: false, traceState: undefined } }],
    kind: SpanKind.CONSUMER,
  });
  withLinks.addEvent('exception', { 'exception.type': 'Error', 'exception.message': 'boom' }, [1_700_000_000, 999_999_999]);
  withLinks.addEvent('no attributes');
  withLinks.end([4_102_444_800, 1]);
  // A child of a remote parent, and a child of that.
  const ctx = trace.setSpanContext(ROOT_CONTEXT, remote);
  const child = tracer.startSpan('child of remote', { kind: SpanKind.SERVER }, ctx);
  const grandchild = unversioned.startSpan('grandchild', {}, trace.setSpan(ctx, child));
  grandchild.setStatus({ code: SpanStatusCode.OK });
  grandchild.end();
  child.end();
  for (let i = 0; i < 3; i++) elsewhere.startSpan(`elsewhere ${i}`, { attributes: { i } }).end();
  tracer.startSpan('last').end();

  const spans = [...one.exporter.getFinishedSpans(), ...two.exporter.getFinishedSpans()];
  // Interleaved, so grouping by resource and scope is exercised.
  return spans.sort((a, b) => a.name.length - b.name.length);
}

/** What the SDK never makes but a span processor could hand over: values past what sanitizing allows. */
function odd(base: ReadableSpan): ReadableSpan {
  return {
    ...base,
    name: base.name,
    spanContext: () => ({ ...base.spanContext(), traceId: '0AF7651916CD43DD8448EB211C80319C', spanId: 'zz' }),
    attributes: { bytes: new Uint8Array([0, 1, 255]) as never, nested: { a: 'b', n: [1, { c: true }] } as never, missing: undefined },
    droppedAttributesCount: 3,
    droppedEventsCount: 2,
    droppedLinksCount: undefined as never,
    events: [{ name: 'e', time: [0, 0], droppedAttributesCount: 5 }],
    resource: base.resource,
    instrumentationScope: base.instrumentationScope,
  };
}

describe('OTLP/protobuf trace encoding', () => {
  const spans = varied();

  it('encodes an export request to the very bytes the library writes', () => {
    expect(spans.length).toBeGreaterThan(20);
    expect(Buffer.from(encodeTraceExportRequest(spans)).equals(Buffer.from(library(spans)!))).toBe(true);
    // Again, now that its attribute keys are kept encoded.
    expect(Buffer.from(encodeTraceExportRequest(spans)).equals(Buffer.from(library(spans)!))).toBe(true);
  });

  it('does so for values the SDK never makes, one span at a time and all together', () => {
    const all = spans.map(odd);
    for (const s of [...spans, ...all]) expect(Buffer.from(encodeTraceExportRequest([s])).equals(Buffer.from(library([s])!))).toBe(true);
    expect(Buffer.from(encodeTraceExportRequest(all)).equals(Buffer.from(library(all)!))).toBe(true);
    expect(Buffer.from(encodeTraceExportRequest([])).equals(Buffer.from(library([])!))).toBe(true);
  });

  it('grows past its buffer for a large export, and each answer is a buffer of its own', () => {
    const many = Array.from({ length: 40 }, () => spans).flat(); // a few MB
    const first = encodeTraceExportRequest(many);
    expect(first.length).toBeGreaterThan(4 << 20);
    expect(Buffer.from(first).equals(Buffer.from(library(many)!))).toBe(true);
    const copy = Buffer.from(first);
    const second = encodeTraceExportRequest(spans.slice(0, 3));
    expect(Buffer.from(first).equals(copy)).toBe(true);
    expect(Buffer.from(second).equals(Buffer.from(library(spans.slice(0, 3))!))).toBe(true);
  });

  it('writes spans encoded at their end into the same export, alone or mixed with spans that were not', () => {
    const all = [...spans, ...spans.map(odd)];
    const encoded = all.map(encodeSpan);
    expect(encoded.every((e) => e instanceof EncodedSpan)).toBe(true);
    expect(encoded.map((e) => e.spanContext())).toEqual(all.map((s) => s.spanContext()));
    expect(Buffer.from(encodeTraceExportRequest(encoded)).equals(Buffer.from(library(all)!))).toBe(true);
    const mixed = all.map((s, i) => (i % 3 === 0 ? s : encoded[i]));
    expect(Buffer.from(encodeTraceExportRequest(mixed)).equals(Buffer.from(library(all)!))).toBe(true);
    // An export in between does not disturb what was encoded before it.
    expect(Buffer.from(encodeTraceExportRequest(spans.slice(0, 2))).equals(Buffer.from(library(spans.slice(0, 2))!))).toBe(true);
    expect(Buffer.from(encodeTraceExportRequest(encoded)).equals(Buffer.from(library(all)!))).toBe(true);
  });

  it('keeps spans encoded across many slabs, and spans larger than what a slab has left or than a slab, intact until their export', () => {
    // Spans of a few KB among small ones: some do not fit what is left of a slab and move to the next.
    const medium = (i: number) =>
      ({ ...spans[0], spanContext: spans[0].spanContext, attributes: { text: 'm'.repeat(3_000 + ((i * 977) % 9_000)) } }) as ReadableSpan;
    const many = Array.from({ length: 30 }, () => spans)
      .flat()
      .flatMap((s, i) => (i % 5 === 0 ? [s, medium(i)] : [s]));
    const big = { ...spans[0], spanContext: spans[0].spanContext, attributes: { text: 'x'.repeat(200_000), more: 'é'.repeat(70_000) } } as ReadableSpan;
    const all = [...many.slice(0, 300), big, ...many.slice(300)];
    const encoded = all.map(encodeSpan);
    expect(new Set(encoded.map((e) => e.slab)).size).toBeGreaterThan(3);
    expect(Buffer.from(encodeTraceExportRequest(encoded)).equals(Buffer.from(library(all)!))).toBe(true);
  });

  it('writes string attributes of any length and alphabet under keys it keeps encoded as the library does', () => {
    // Keys seen before are written by the front-to-back path (every length computed first); a
    // short string that is not ASCII falls back to the general one. Lengths straddle each varint
    // size of the three nested fields (127 and 128 bytes, 16383 and 16384).
    const base = spans[0];
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.integer({ min: 0, max: 300 }).map((n) => ascii(n)),
      fc.integer({ min: 16_370, max: 16_390 }).map((n) => ascii(n)),
      fc.tuple(fc.integer({ min: 0, max: 140 }), fc.constantFrom('é', '日', '😀', '\uD800')).map(([n, c]) => ascii(n) + c),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('gen_ai.tool.name', 'cp.org.id', 'db.query.text', 'a', ascii(40)), text), (attributes) => {
        const one = { ...base, spanContext: base.spanContext, attributes } as ReadableSpan;
        for (let i = 0; i < 2; i++) {
          expect(Buffer.from(encodeTraceExportRequest([one])).equals(Buffer.from(library([one])!))).toBe(true);
          expect(Buffer.from(encodeTraceExportRequest([encodeSpan(one) as never])).equals(Buffer.from(library([one])!))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("writes the ids of the product's recorder from the words it keeps to the bytes the library reads from their hex", () => {
    // Roots, children and grandchildren, children of a remote parent (hex in either case, as the API
    // accepts it) and of a non-recording one, over enough spans that the recorder's pool of random bytes is refilled several times.
    const ended: ReadableSpan[] = [];
    const processor = {
      onStart: () => undefined,
      onEnd: (s: ReadableSpan) => void ended.push(s),
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    };
    const tracer = new RecordingTracerProvider({ resource: spans[0].resource, sampler: new AlwaysOnSampler(), spanProcessors: [processor] }).getTracer('ids');
    const remote = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED, isRemote: true };
    for (let i = 0; i < 700; i++) {
      const parentContext =
        i % 7 === 0
          ? trace.setSpanContext(ROOT_CONTEXT, { ...remote, spanId: remote.spanId.slice(0, 15) + (i % 10) })
          : i % 11 === 0
            ? trace.setSpanContext(ROOT_CONTEXT, { ...remote, isRemote: false })
            : i % 13 === 0
              ? trace.setSpanContext(ROOT_CONTEXT, { ...remote, traceId: remote.traceId.toUpperCase(), spanId: remote.spanId.toUpperCase() })
              : ROOT_CONTEXT;
      const root = tracer.startSpan(`root ${i}`, { attributes: { i } }, parentContext);
      const child = tracer.startSpan('child', {}, trace.setSpan(ROOT_CONTEXT, root));
      tracer.startSpan('grandchild', {}, trace.setSpan(ROOT_CONTEXT, child)).end();
      child.end();
      root.end();
    }
    const kinds = new Set(ended.map((s) => (s as RecordedSpan).idWords));
    expect([...kinds].sort()).toEqual([1, 2]);
    expect(Buffer.from(encodeTraceExportRequest(ended)).equals(Buffer.from(library(ended)!))).toBe(true);
    expect(Buffer.from(encodeTraceExportRequest(ended.map(encodeSpan) as never)).equals(Buffer.from(library(ended)!))).toBe(true);
  });

  it("replaces the library's serializer in the exporters, once", () => {
    expect(useFastOtlpTraceEncoding()).toBe(true);
    expect(serializer.serializeRequest).toBe(encodeTraceExportRequest);
    expect(useFastOtlpTraceEncoding()).toBe(true);
    expect(Buffer.from(serializer.serializeRequest(spans)!).equals(Buffer.from(library(spans)!))).toBe(true);
  });
});
