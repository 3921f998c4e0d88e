import {
  Attributes,
  AttributeValue,
  context,
  diag,
  DiagLogLevel,
  HrTime,
  Link,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  TimeInput,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { suppressTracing, TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  ReadableSpan,
  Sampler,
  SamplingDecision,
  SpanLimits,
  SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { parentFlagDecides, RecordedSpan, RecordingTracerProvider } from './recording-tracer';
import { samplerFromEnv } from './sdk-config';

/**
 * The product's span side by side with the SDK's: the same script of calls made on both (spans
 * started with every kind of option, attributes, events, links, statuses, names, exceptions, ends,
 * calls after the end), under the same limits and sampler; what the processors are handed, and
 * what diag is told, must be the same but for ids and the clock.
 */

const resource = resourceFromAttributes({ 'service.name': 'recording-tracer.spec' });

interface Seen {
  started: number;
  ended: ReadableSpan[];
  logs: string[];
}

function capture(): { processor: SpanProcessor; seen: Seen } {
  const seen: Seen = { started: 0, ended: [], logs: [] };
  const processor: SpanProcessor = {
    onStart: () => void seen.started++,
    onEnd: (span) => void seen.ended.push(span),
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  return { processor, seen };
}

/** A sampler that records without sampling some spans, and adds attributes and trace state to others. */
const fussy: Sampler = {
  shouldSample: (_ctx, _traceId, name, _kind, attributes) => {
    if (name.startsWith('drop')) return { decision: SamplingDecision.NOT_RECORD };
    if (name.startsWith('quiet')) return { decision: SamplingDecision.RECORD };
    attributes['sampler.saw'] = Object.keys(attributes).length;
    return { decision: SamplingDecision.RECORD_AND_SAMPLED, attributes: { 'sampler.added': 'yes', '': 'bad key' }, traceState: new TraceState('s=1') };
  },
  toString: () => 'fussy',
};

const SAMPLERS: Record<string, () => Sampler> = {
  parentOn: () => new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  on: () => new AlwaysOnSampler(),
  off: () => new AlwaysOffSampler(),
  parentOff: () => new ParentBasedSampler({ root: new AlwaysOffSampler() }),
  fussy: () => fussy,
  // Parent-based, but not with the default samplers under a local parent: asked every time.
  parentFussy: () => new ParentBasedSampler({ root: new AlwaysOnSampler(), localParentSampled: fussy, localParentNotSampled: new AlwaysOnSampler() }),
};

const key = fc.constantFrom('a', 'b', 'c.d', 'http.route', '', 'constructor', 'toString', 'x'.repeat(40));
const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('héllo wörld, 日本語 😀', 'y'.repeat(30)),
  fc.integer(),
  fc.double({ noNaN: false }),
  fc.boolean(),
  fc.constantFrom(null, undefined),
  fc.array(fc.string({ maxLength: 15 }), { maxLength: 4 }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constantFrom([1, 'mixed'], [null, 'a', undefined], [{}], { an: 'object' }, () => 1),
);
const attributes = fc.dictionary(key, value, { maxKeys: 6 }) as fc.Arbitrary<Attributes>;
/** Explicit times: HrTime, epoch milliseconds, a Date (performance timestamps are tested apart). */
const time = fc.oneof(
  fc.tuple(fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }), fc.integer({ min: 0, max: 999_999_999 })).map((t) => t as HrTime),
  fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
  fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }).map((ms) => new Date(ms)),
);
const linkTo = fc.record({ target: fc.nat(), attributes: fc.option(attributes, { nil: undefined }) });

type Op =
  | { op: 'setAttribute'; key: string; value: unknown }
  | { op: 'setAttributes'; attributes: Attributes }
  | { op: 'addEvent'; name: string; attributes?: Attributes; time?: TimeInput; timeFirst: boolean }
  | { op: 'addLink' | 'addLinks'; links: { target: number; attributes?: Attributes }[] }
  | { op: 'setStatus'; code: SpanStatusCode; message?: unknown }
  | { op: 'updateName'; name: string }
  | { op: 'recordException'; exception: unknown; time?: TimeInput }
  | { op: 'end'; time?: TimeInput };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('setAttribute' as const), key, value }),
  fc.record({ op: fc.constant('setAttributes' as const), attributes }),
  fc.record({
    op: fc.constant('addEvent' as const),
    name: fc.string({ maxLength: 8 }),
    attributes: fc.option(attributes, { nil: undefined }),
    time: fc.option(time, { nil: undefined }),
    timeFirst: fc.boolean(),
  }),
  fc.record({ op: fc.constantFrom('addLink' as const, 'addLinks' as const), links: fc.array(linkTo, { minLength: 1, maxLength: 3 }) }),
  fc.record({
    op: fc.constant('setStatus' as const),
    code: fc.constantFrom(SpanStatusCode.UNSET, SpanStatusCode.OK, SpanStatusCode.ERROR),
    message: fc.option(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { nil: undefined }),
  }),
  fc.record({ op: fc.constant('updateName' as const), name: fc.string({ maxLength: 8 }) }),
  fc.record({
    op: fc.constant('recordException' as const),
    exception: fc.constantFrom(
      'plain text',
      new TypeError('typed'),
      { code: 42, message: 'coded' },
      { name: 'Named' },
      {},
      undefined,
      Object.assign(new Error(''), { stack: '' }),
    ),
    time: fc.option(time, { nil: undefined }),
  }),
  fc.record({ op: fc.constant('end' as const), time: fc.option(time, { nil: undefined }) }),
);

interface SpanScript {
  name: string;
  kind?: SpanKind;
  attributes?: Attributes;
  links: { target: number; attributes?: Attributes }[];
  /** Index of an earlier span to be the parent, or none (the active context, which is empty). */
  parent?: number;
  /** A caller's span as the parent instead (`traceparent`), sampled or not. */
  remote?: 'sampled' | 'unsampled';
  root: boolean;
  suppressed: boolean;
  startTime?: TimeInput;
  ops: Op[];
  active: boolean;
}

const spanScript: fc.Arbitrary<SpanScript> = fc.record({
  name: fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('drop me', 'quiet one', 'GET /x')),
  kind: fc.option(fc.constantFrom(SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER), { nil: undefined }),
  attributes: fc.option(attributes, { nil: undefined }),
  links: fc.array(linkTo, { maxLength: 2 }),
  parent: fc.option(fc.nat(), { nil: undefined }),
  remote: fc.constantFrom(undefined, undefined, undefined, 'sampled' as const, 'unsampled' as const),
  root: fc.boolean(),
  suppressed: fc.constantFrom(false, false, false, false, true),
  startTime: fc.option(time, { nil: undefined }),
  ops: fc.array(op, { maxLength: 8 }),
  active: fc.boolean(),
});

const limits: fc.Arbitrary<SpanLimits> = fc.record(
  {
    attributeCountLimit: fc.integer({ min: 0, max: 5 }),
    attributeValueLengthLimit: fc.integer({ min: -1, max: 12 }),
    eventCountLimit: fc.integer({ min: 0, max: 3 }),
    linkCountLimit: fc.integer({ min: 0, max: 3 }),
    attributePerEventCountLimit: fc.integer({ min: 0, max: 3 }),
    attributePerLinkCountLimit: fc.integer({ min: 0, max: 3 }),
  },
  { requiredKeys: [] },
);

/** Runs the script on one provider; answers the spans started (null for one the sampler dropped). */
function run(provider: { getTracer(name: string, version?: string): ReturnType<TracerProvider['getTracer']> }, script: SpanScript[]): Span[] {
  const tracer = provider.getTracer('script', '1.0');
  const spans: Span[] = [];
  const contextOf = (s: SpanScript) => {
    let ctx = s.parent !== undefined && spans.length ? trace.setSpan(ROOT_CONTEXT, spans[s.parent % spans.length]) : ROOT_CONTEXT;
    if (s.remote) {
      const traceFlags = s.remote === 'sampled' ? TraceFlags.SAMPLED : TraceFlags.NONE;
      ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags, isRemote: true });
    }
    if (s.suppressed) ctx = suppressTracing(ctx);
    return ctx;
  };
  const links = (ls: { target: number; attributes?: Attributes }[]): Link[] =>
    spans.length ? ls.map((l) => ({ context: spans[l.target % spans.length].spanContext(), attributes: l.attributes })) : [];
  for (const s of script) {
    const options = { kind: s.kind, attributes: s.attributes, links: links(s.links), root: s.root, startTime: s.startTime };
    const span = s.active ? tracer.startActiveSpan(s.name, options, contextOf(s), (sp: Span) => sp) : tracer.startSpan(s.name, options, contextOf(s));
    spans.push(span);
    for (const o of s.ops) {
      switch (o.op) {
        case 'setAttribute':
          span.setAttribute(o.key, o.value as AttributeValue);
          break;
        case 'setAttributes':
          span.setAttributes(o.attributes);
          break;
        case 'addEvent':
          if (o.timeFirst && o.time !== undefined) span.addEvent(o.name, o.time);
          else span.addEvent(o.name, o.attributes, o.time);
          break;
        case 'addLink':
          for (const l of links(o.links)) span.addLink(l);
          break;
        case 'addLinks':
          span.addLinks(links(o.links));
          break;
        case 'setStatus':
          span.setStatus({ code: o.code, message: o.message as string });
          break;
        case 'updateName':
          span.updateName(o.name);
          break;
        case 'recordException':
          span.recordException(o.exception as Error, o.time);
          break;
        case 'end':
          span.end(o.time);
          break;
      }
    }
    if (!s.ops.some((o) => o.op === 'end')) span.end(s.startTime !== undefined ? s.startTime : undefined);
  }
  return spans;
}

/** What a processor was handed, ids replaced by the index of the span that has them, times by a mark when not given. */
function normalized(seen: Seen, started: Span[]): unknown[] {
  const ids = new Map(started.map((s, i) => [s.spanContext().spanId, i]));
  const ctx = (c: { spanId: string; traceFlags: number; traceState?: { serialize(): string }; isRemote?: boolean } | undefined) =>
    c && { span: ids.get(c.spanId) ?? 'other', flags: c.traceFlags, state: c.traceState?.serialize(), remote: c.isRemote };
  return seen.ended.map((s) => ({
    name: s.name,
    kind: s.kind,
    self: ctx(s.spanContext()),
    parent: ctx(s.parentSpanContext),
    attributes: { ...s.attributes },
    prototype: Object.getPrototypeOf(s.attributes) === Object.prototype,
    droppedAttributes: s.droppedAttributesCount,
    events: s.events.map((e) => ({ name: e.name, attributes: e.attributes, dropped: e.droppedAttributesCount })),
    droppedEvents: s.droppedEventsCount,
    links: s.links.map((l) => ({ to: ctx(l.context as never), attributes: l.attributes, dropped: l.droppedAttributesCount })),
    droppedLinks: s.droppedLinksCount,
    status: s.status,
    scope: s.instrumentationScope,
    resource: s.resource === resource,
    ended: s.ended,
    duration: s.duration[0] >= 0 && s.duration[1] >= 0,
    recording: (s as unknown as Span).isRecording(),
  }));
}

/** Span times where the script gave them (the clock differs between the two runs otherwise). */
function givenTimes(seen: Seen, started: Span[], script: SpanScript[]): unknown[] {
  const index = new Map(started.map((s, i) => [s.spanContext().spanId, i]));
  return seen.ended.map((s) => {
    const given = script[index.get(s.spanContext().spanId)!];
    const endGiven = given.startTime !== undefined && !given.ops.some((o) => o.op === 'end' && o.time === undefined);
    return { start: given.startTime !== undefined ? s.startTime : 'now', end: endGiven ? s.endTime : 'now' };
  });
}

describe('RecordingTracerProvider, side by side with the SDK', () => {
  const logs: string[] = [];
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const log = (level: string) => (message: string) => void logs.push(`${level} ${message.replace(/[0-9a-f]{16,32}/g, 'ID')}`);
    diag.setLogger({ error: log('error'), warn: log('warn'), info: () => undefined, debug: log('debug'), verbose: () => undefined }, DiagLogLevel.ALL);
  });
  afterAll(() => {
    diag.disable();
    context.disable();
  });

  it('hands processors the same spans and tells diag the same, for any script of calls, limits and sampler', () => {
    fc.assert(
      fc.property(
        fc.array(spanScript, { minLength: 1, maxLength: 6 }),
        limits,
        fc.constantFrom(...Object.keys(SAMPLERS)),
        (script, spanLimits, samplerName) => {
          const sdk = capture();
          const ours = capture();
          logs.length = 0;
          const sdkSpans = run(new TracerProvider({ resource, sampler: SAMPLERS[samplerName](), spanLimits, spanProcessors: [sdk.processor] }), script);
          const sdkLogs = logs.splice(0);
          const ourSpans = run(
            new RecordingTracerProvider({ resource, sampler: SAMPLERS[samplerName](), spanLimits, spanProcessors: [ours.processor] }),
            script,
          );
          const ourLogs = logs.splice(0);
          expect(ours.seen.started).toBe(sdk.seen.started);
          expect(normalized(ours.seen, ourSpans)).toEqual(normalized(sdk.seen, sdkSpans));
          expect(givenTimes(ours.seen, ourSpans, script)).toEqual(givenTimes(sdk.seen, sdkSpans, script));
          expect(ourSpans.map((s) => s.spanContext().traceFlags)).toEqual(sdkSpans.map((s) => s.spanContext().traceFlags));
          expect(ourSpans.map((s) => s.isRecording())).toEqual(sdkSpans.map((s) => s.isRecording()));
          expect(ourLogs).toEqual(sdkLogs);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('keeps a span its own time, as the SDK does: start and end from the clock, or as given', async () => {
    const { processor, seen } = capture();
    const tracer = new RecordingTracerProvider({ resource, sampler: new AlwaysOnSampler(), spanProcessors: [processor] }).getTracer('t');
    const before = Date.now();
    const span = tracer.startSpan('timed');
    await new Promise((r) => setTimeout(r, 20));
    span.addEvent('performance timestamp', performance.now());
    span.end();
    const after = Date.now();
    const [s] = seen.ended;
    const ms = (t: HrTime) => t[0] * 1e3 + t[1] / 1e6;
    expect(ms(s.startTime)).toBeGreaterThanOrEqual(before);
    expect(ms(s.endTime)).toBeLessThanOrEqual(after + 1);
    expect(ms(s.duration)).toBeGreaterThanOrEqual(19);
    expect(Math.abs(ms(s.events[0].time) - ms(s.endTime))).toBeLessThan(5);
    tracer.startSpan('given', { startTime: [1_700_000_000, 5] }).end([1_700_000_001, 4]);
    expect([seen.ended[1].startTime, seen.ended[1].endTime, seen.ended[1].duration]).toEqual([
      [1_700_000_000, 5],
      [1_700_000_001, 4],
      [0, 999_999_999],
    ]);
    tracer.startSpan('backwards', { startTime: [1_700_000_000, 5] }).end([1_699_999_999, 0]);
    expect(seen.ended[2].duration).toEqual([0, 0]);
  });

  it('makes random ids, children in their parent trace, as the ratio sampler reads them', () => {
    const { processor, seen } = capture();
    const tracer = new RecordingTracerProvider({ resource, sampler: new TraceIdRatioBasedSampler(0.5), spanProcessors: [processor] }).getTracer('t');
    const roots = Array.from({ length: 2000 }, () => tracer.startSpan('root', {}, ROOT_CONTEXT));
    const ids = new Set(roots.map((r) => r.spanContext().spanId));
    expect(ids.size).toBe(2000);
    for (const r of roots) {
      expect(r.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(r.spanContext().spanId).toMatch(/^[0-9a-f]{16}$/);
    }
    const sampled = roots.filter((r) => r.spanContext().traceFlags === TraceFlags.SAMPLED).length;
    expect(sampled).toBeGreaterThan(850);
    expect(sampled).toBeLessThan(1150);
    const parent = roots.find((r) => r.isRecording())!;
    const child = tracer.startSpan('child', {}, trace.setSpan(ROOT_CONTEXT, parent));
    expect(child.spanContext().traceId).toBe(parent.spanContext().traceId);
    child.end();
    expect((seen.ended[0] as RecordedSpan).parentSpanContext).toEqual(parent.spanContext());
  });

  it('runs a function in its span as the active one (startActiveSpan), as the SDK does', async () => {
    const { processor } = capture();
    const tracer = new RecordingTracerProvider({ resource, sampler: new AlwaysOnSampler(), spanProcessors: [processor] }).getTracer('t');
    const inner = await tracer.startActiveSpan('outer', async (outer) => {
      await new Promise((r) => setTimeout(r, 1));
      const child = tracer.startSpan('inner');
      expect(child.spanContext().traceId).toBe(outer.spanContext().traceId);
      outer.end();
      return trace.getActiveSpan();
    });
    expect(inner).toBeDefined();
    expect(trace.getActiveSpan()).toBeUndefined();
    expect(tracer.startActiveSpan('with options', { kind: SpanKind.SERVER }, (s) => (s as unknown as RecordedSpan).kind)).toBe(SpanKind.SERVER);
  });

  it("samples under its own spans by the parent's flag for every parent-based sampler of OTEL_TRACES_SAMPLER, without asking it", () => {
    const saved = { name: process.env.OTEL_TRACES_SAMPLER, arg: process.env.OTEL_TRACES_SAMPLER_ARG };
    try {
      process.env.OTEL_TRACES_SAMPLER_ARG = '0.5';
      for (const name of [undefined, 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio']) {
        if (name === undefined) delete process.env.OTEL_TRACES_SAMPLER;
        else process.env.OTEL_TRACES_SAMPLER = name;
        expect([name, parentFlagDecides(samplerFromEnv())]).toEqual([name, true]);
      }
    } finally {
      if (saved.name === undefined) delete process.env.OTEL_TRACES_SAMPLER;
      else process.env.OTEL_TRACES_SAMPLER = saved.name;
      if (saved.arg === undefined) delete process.env.OTEL_TRACES_SAMPLER_ARG;
      else process.env.OTEL_TRACES_SAMPLER_ARG = saved.arg;
    }
    class Sampling extends AlwaysOnSampler {}
    expect(parentFlagDecides(new ParentBasedSampler({ root: new AlwaysOnSampler(), localParentSampled: new Sampling() }))).toBe(false);
    expect(parentFlagDecides(new AlwaysOnSampler())).toBe(false);

    const sampler = new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.5) });
    const asked = jest.spyOn(sampler, 'shouldSample');
    const { processor, seen } = capture();
    const tracer = new RecordingTracerProvider({ resource, sampler, spanProcessors: [processor] }).getTracer('t');
    const roots = Array.from({ length: 200 }, () => tracer.startSpan('root', {}, ROOT_CONTEXT));
    for (const r of roots) {
      const child = tracer.startSpan('child', {}, trace.setSpan(ROOT_CONTEXT, r));
      expect([child.isRecording(), child.spanContext().traceFlags, child.spanContext().traceId]).toEqual([
        r.isRecording(),
        r.spanContext().traceFlags,
        r.spanContext().traceId,
      ]);
      tracer.startSpan('grandchild', {}, trace.setSpan(ROOT_CONTEXT, child)).end();
      child.end();
    }
    expect(asked).toHaveBeenCalledTimes(200);
    expect(seen.ended.length).toBe(2 * roots.filter((r) => r.isRecording()).length);
  });
});
