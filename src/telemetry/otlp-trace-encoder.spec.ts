import { Attributes, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
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

  it("replaces the library's serializer in the exporters, once", () => {
    expect(useFastOtlpTraceEncoding()).toBe(true);
    expect(serializer.serializeRequest).toBe(encodeTraceExportRequest);
    expect(useFastOtlpTraceEncoding()).toBe(true);
    expect(Buffer.from(serializer.serializeRequest(spans)!).equals(Buffer.from(library(spans)!))).toBe(true);
  });
});
