// Longer than 300 lines because it is one object model: the provider, its tracers and the span
// they record share the limits, the clock and the id pool, and the span must answer both the API's
// `Span` and the SDK's `ReadableSpan`, member by member as `sdk-trace` does.
import {
  Attributes,
  AttributeValue,
  Context,
  context as contextApi,
  diag,
  Exception,
  HrTime,
  INVALID_SPAN_CONTEXT,
  Link,
  Span as ApiSpan,
  SpanAttributes,
  SpanContext,
  SpanKind,
  SpanOptions,
  SpanStatus,
  SpanStatusCode,
  TimeInput,
  trace,
  TraceFlags,
  Tracer,
  TracerOptions,
  TracerProvider,
} from '@opentelemetry/api';
import {
  addHrTimes,
  hrTimeDuration,
  isAttributeValue,
  isTimeInput,
  isTimeInputHrTime,
  isTracingSuppressed,
  millisToHrTime,
  otperformance,
} from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  ReadableSpan,
  Sampler,
  SamplingDecision,
  SamplingResult,
  Span as SdkSpan,
  SpanLimits,
  SpanProcessor,
  TimedEvent,
} from '@opentelemetry/sdk-trace';
import { randomFillSync } from 'node:crypto';
import type { IdWords } from './otlp-trace-encoder';

/**
 * The spans the product records while tracing exports over OTLP: a tracer provider of its own in
 * place of `@opentelemetry/sdk-trace`'s, with the same sampler, span limits, resource and span
 * processors (all still the SDK's, configured from the same OTEL_* variables).
 *
 * Why: recording a span was the largest part of what tracing costs a governed call once the
 * export was cheap (docs/benchmarks.md, issue 19): the SDK's span copies its attributes three
 * times, keeps four time arrays, builds the attribute objects and a closure of its self-metrics for
 * every span even on a no-op meter, and makes each id from `Math.random` into a Buffer turned into
 * hex. This span checks and copies its attributes once, keeps its times as numbers until it is
 * read, and takes ids from a pool of random bytes already in hex: 0.46 µs a span against 1.75.
 *
 * What it deliberately does not do: anything the SDK's span does not. It answers the API's `Span`
 * and the SDK's `ReadableSpan` member by member, with the SDK's limits, truncation, warnings,
 * status rules, event and link handling and times (tested side by side with the SDK's in
 * recording-tracer.spec.ts); samplers and processors are the SDK's own objects, called as the
 * SDK calls them. No self-metrics (`otel.sdk.span.*`: the SDK records them only on an opt-in this
 * product does not set).
 */

const HEX_POOL_BYTES = 4096;
let hexPool = '';
let hexAt = 0;
const rawPool = Buffer.allocUnsafeSlow(HEX_POOL_BYTES);
/**
 * The pool's bytes as 32-bit words in the machine's order: on a little-endian machine a word
 * written least significant byte first (as the OTLP encoder writes a fixed32) is the id's bytes in
 * order, so a span can carry its ids as numbers for the encoder (`IdWords`) at no cost to draw.
 */
const poolWords = new Int32Array(rawPool.buffer, rawPool.byteOffset, HEX_POOL_BYTES >> 2);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Where the last id drawn starts in `poolWords`, or -1 when its words are not the pool's. */
let drawnWord = -1;

/** `chars` hex digits of crypto-grade randomness, never all zeros (an invalid id). */
function randomHex(chars: number): string {
  if (hexAt + chars > hexPool.length) {
    hexPool = randomFillSync(rawPool).toString('hex');
    hexAt = 0;
  }
  const at = hexAt;
  const id = hexPool.slice(at, (hexAt += chars));
  const word = at >> 3;
  let any = 0;
  for (let i = 0; i < chars >> 3; i++) any |= poolWords[word + i];
  if (any !== 0) {
    drawnWord = LITTLE_ENDIAN ? word : -1;
    return id;
  }
  // One id in 2^64 (span) or 2^128 (trace); the SDK's generator makes the last digit 1 then too.
  drawnWord = -1;
  return id.slice(0, -1) + '1';
}

/** A trace id's words, shared by every span of the trace this process records. */
interface TraceWords {
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
}

/** The words of a valid id in hex (a remote parent's), as the pool would have held its bytes. */
function wordOf(hex: string, at: number): number {
  return (
    parseInt(hex.substring(at, at + 2), 16) |
    (parseInt(hex.substring(at + 2, at + 4), 16) << 8) |
    (parseInt(hex.substring(at + 4, at + 6), 16) << 16) |
    (parseInt(hex.substring(at + 6, at + 8), 16) << 24)
  );
}

/**
 * A child's trace id as the encoder's words: its recorded parent's, or read once from the hex of
 * any other parent (a remote one, or one left unrecorded: only spans that are recorded pay for it).
 */
function inheritedTraceWords(recordedParent: RecordedSpan | undefined, traceId: string): TraceWords | undefined {
  if (recordedParent !== undefined) return recordedParent.idWords === 0 ? undefined : recordedParent.traceWords;
  return LITTLE_ENDIAN ? { w0: wordOf(traceId, 0), w1: wordOf(traceId, 8), w2: wordOf(traceId, 16), w3: wordOf(traceId, 24) } : undefined;
}

/** Span limits with the SDK's defaults filled in (TracerProvider's constructor). */
export type ResolvedSpanLimits = Required<SpanLimits>;

export function resolvedSpanLimits(limits: SpanLimits = {}): ResolvedSpanLimits {
  return {
    attributeCountLimit: limits.attributeCountLimit ?? 128,
    attributeValueLengthLimit: limits.attributeValueLengthLimit ?? Infinity,
    eventCountLimit: limits.eventCountLimit ?? 128,
    linkCountLimit: limits.linkCountLimit ?? 128,
    attributePerEventCountLimit: limits.attributePerEventCountLimit ?? 128,
    attributePerLinkCountLimit: limits.attributePerLinkCountLimit ?? 128,
  };
}

interface Shared {
  resource: Resource;
  sampler: Sampler;
  /** Whether the sampler's answer under a local parent is the parent's sampled flag (`parentFlagDecides`). */
  localParentDecides: boolean;
  limits: ResolvedSpanLimits;
  processor: SpanProcessor;
}

const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET }) as SpanStatus;
const RECORD_AND_SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });
const NOT_RECORD: SamplingResult = Object.freeze({ decision: SamplingDecision.NOT_RECORD });

/**
 * Whether `sampler` is the SDK's parent-based sampler with its default samplers for a local
 * parent (always-on under a sampled one, always-off under any other): every OTEL_TRACES_SAMPLER
 * value named `parentbased_*` is. Its answer under a local parent is then the parent's sampled
 * flag and nothing more (no attributes, no trace state). The delegates are read by their exact
 * classes (a subclass may answer otherwise); fields the SDK might rename answer false, and spans
 * are then sampled by the sampler itself, as before.
 */
export function parentFlagDecides(sampler: Sampler): boolean {
  if (!(sampler instanceof ParentBasedSampler)) return false;
  const delegates = sampler as unknown as { _localParentSampled?: object; _localParentNotSampled?: object };
  return delegates._localParentSampled?.constructor === AlwaysOnSampler && delegates._localParentNotSampled?.constructor === AlwaysOffSampler;
}

/** The SDK's checks of an attribute map, in one pass: valid keys and values, arrays copied. */
function sanitized(attributes: Attributes | undefined): Attributes {
  const out: Attributes = {};
  if (typeof attributes !== 'object' || attributes == null) return out;
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
    if (key === '') {
      diag.warn(`Invalid attribute key: ${key}`);
      continue;
    }
    const value = attributes[key];
    if (!isAttributeValue(value)) {
      diag.warn(`Invalid attribute value set for key: ${key}`);
      continue;
    }
    out[key] = Array.isArray(value) ? value.slice() : value;
  }
  return out;
}

function truncated(value: AttributeValue, limit: number): AttributeValue {
  if (limit <= 0) {
    diag.warn(`Attribute value limit must be positive, got ${limit}`);
    return value;
  }
  if (typeof value === 'string') return value.length <= limit ? value : value.substring(0, limit);
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' && v.length > limit ? v.substring(0, limit) : v)) as AttributeValue;
  return value;
}

/** A recorded span: the API's `Span` while it runs, the SDK's `ReadableSpan` once it has ended. */
export class RecordedSpan implements SdkSpan, IdWords {
  readonly attributes: Attributes = {};
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  status: SpanStatus = UNSET;
  private attributeCount = 0;
  private droppedAttributes = 0;
  private droppedEvents = 0;
  private droppedLinks = 0;
  private endedAt: HrTime | undefined;
  /** Date.now() when the span started, and performance.now() then: the SDK's clock. */
  private readonly startMs: number;
  private readonly startPerf: number;
  private readonly startTimeProvided: boolean;
  readonly startTime: HrTime;
  /**
   * The ids as the OTLP encoder writes them (`IdWords` in otlp-trace-encoder.ts): 0 when not known
   * (the encoder then reads the hex), 1 for the trace and span ids, 2 for the parent span's too.
   */
  idWords = 0;
  traceWords: TraceWords | undefined = undefined;
  spanWord0 = 0;
  spanWord1 = 0;
  parentWord0 = 0;
  parentWord1 = 0;

  constructor(
    private readonly shared: Shared,
    readonly instrumentationScope: { name: string; version?: string; schemaUrl?: string },
    private readonly context: SpanContext,
    public name: string,
    readonly kind: SpanKind,
    readonly parentSpanContext: SpanContext | undefined,
    attributes: Attributes,
    links: Link[],
    startTime: TimeInput | undefined,
  ) {
    this.startMs = Date.now();
    this.startPerf = otperformance.now();
    this.startTimeProvided = startTime != null;
    for (const link of links) this.addLink(link);
    // Date.now() is always past any performance timestamp: the SDK's _getTime(now) is this.
    this.startTime = startTime == null ? millisToHrTime(this.startMs) : this.timeOf(startTime);
    const { attributeCountLimit, attributeValueLengthLimit } = shared.limits;
    // The SDK sets them one by one (`setAttributes`); the same result for an already checked map.
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
      const value = attributes[key];
      if (value == null) continue;
      if (this.attributeCount >= attributeCountLimit) {
        this.droppedAttributes++;
        continue;
      }
      this.attributes[key] = attributeValueLengthLimit === Infinity ? value : truncated(value, attributeValueLengthLimit);
      this.attributeCount++;
    }
  }

  get resource(): Resource {
    return this.shared.resource;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value?: AttributeValue): this {
    if (value == null || this.endedWarning()) return this;
    if (key.length === 0) {
      diag.warn(`Invalid attribute key: ${key}`);
      return this;
    }
    if (!isAttributeValue(value)) {
      diag.warn(`Invalid attribute value set for key: ${key}`);
      return this;
    }
    const isNew = !Object.prototype.hasOwnProperty.call(this.attributes, key);
    if (isNew && this.attributeCount >= this.shared.limits.attributeCountLimit) {
      this.droppedAttributes++;
      return this;
    }
    const limit = this.shared.limits.attributeValueLengthLimit;
    this.attributes[key] = limit === Infinity ? value : truncated(value, limit);
    if (isNew) this.attributeCount++;
    return this;
  }

  setAttributes(attributes: SpanAttributes): this {
    for (const key in attributes) if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrStartTime?: SpanAttributes | TimeInput, timeStamp?: TimeInput): this {
    if (this.endedWarning()) return this;
    const { eventCountLimit, attributePerEventCountLimit } = this.shared.limits;
    if (eventCountLimit === 0) {
      diag.warn('No events allowed.');
      this.droppedEvents++;
      return this;
    }
    if (this.events.length >= eventCountLimit) {
      if (this.droppedEvents === 0) diag.debug('Dropping extra events.');
      this.events.shift();
      this.droppedEvents++;
    }
    if (isTimeInput(attributesOrStartTime)) {
      if (!isTimeInput(timeStamp)) timeStamp = attributesOrStartTime;
      attributesOrStartTime = undefined;
    }
    const clean = sanitized(attributesOrStartTime as Attributes | undefined);
    const attributes: Attributes = {};
    let count = 0;
    let dropped = 0;
    for (const key in clean) {
      if (!Object.prototype.hasOwnProperty.call(clean, key)) continue;
      if (count >= attributePerEventCountLimit) {
        dropped++;
        continue;
      }
      attributes[key] = this.truncate(clean[key]!);
      count++;
    }
    this.events.push({ name, attributes, time: this.timeOf(timeStamp), droppedAttributesCount: dropped });
    return this;
  }

  addLink(link: Link): this {
    if (this.endedWarning()) return this;
    const { linkCountLimit, attributePerLinkCountLimit } = this.shared.limits;
    if (linkCountLimit === 0) {
      this.droppedLinks++;
      return this;
    }
    if (this.links.length >= linkCountLimit) {
      if (this.droppedLinks === 0) diag.debug('Dropping extra links.');
      this.links.shift();
      this.droppedLinks++;
    }
    const clean = sanitized(link.attributes);
    const attributes: Attributes = {};
    let count = 0;
    let dropped = 0;
    for (const key in clean) {
      if (!Object.prototype.hasOwnProperty.call(clean, key)) continue;
      if (count >= attributePerLinkCountLimit) {
        dropped++;
        continue;
      }
      attributes[key] = this.truncate(clean[key]!);
      count++;
    }
    const processed: Link = { context: link.context };
    if (count > 0) processed.attributes = attributes;
    if (dropped > 0) processed.droppedAttributesCount = dropped;
    this.links.push(processed);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.endedWarning()) return this;
    if (status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    const next: SpanStatus = { code: status.code };
    if (status.code === SpanStatusCode.ERROR) {
      if (typeof status.message === 'string') next.message = status.message;
      else if (status.message != null) diag.warn(`Dropping invalid status.message of type '${typeof status.message}', expected 'string'`);
    }
    this.status = next;
    return this;
  }

  updateName(name: string): this {
    if (this.endedWarning()) return this;
    this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.endedWarning()) {
      diag.error(`${this.name} ${this.context.traceId}-${this.context.spanId} - You can only call end() on a span once.`);
      return;
    }
    let end = this.timeOf(endTime);
    if (hrTimeDuration(this.startTime, end)[0] < 0) {
      diag.warn('Inconsistent start and end time, startTime > endTime. Setting span duration to 0ms.', this.startTime, end);
      end = [this.startTime[0], this.startTime[1]];
    }
    if (this.droppedEvents > 0) diag.warn(`Dropped ${this.droppedEvents} events because eventCountLimit reached`);
    if (this.droppedLinks > 0) diag.warn(`Dropped ${this.droppedLinks} links because linkCountLimit reached`);
    const processor = this.shared.processor;
    processor.onEnding?.(this);
    this.endedAt = end;
    processor.onEnd(this);
  }

  isRecording(): boolean {
    return this.endedAt === undefined;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') {
      attributes['exception.message'] = exception;
    } else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString();
      else if (exception.name) attributes['exception.type'] = exception.name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
    else diag.warn(`Failed to record an exception ${String(exception)}`);
  }

  get endTime(): HrTime {
    return this.endedAt ?? [0, 0];
  }

  get duration(): HrTime {
    return this.endedAt ? hrTimeDuration(this.startTime, this.endedAt) : [-1, -1];
  }

  get ended(): boolean {
    return this.endedAt !== undefined;
  }

  get droppedAttributesCount(): number {
    return this.droppedAttributes;
  }

  get droppedEventsCount(): number {
    return this.droppedEvents;
  }

  get droppedLinksCount(): number {
    return this.droppedLinks;
  }

  private truncate(value: AttributeValue): AttributeValue {
    return truncated(value, this.shared.limits.attributeValueLengthLimit);
  }

  /** As the SDK: a time given as a performance timestamp, epoch milliseconds, a Date or HrTime; none: now. */
  private timeOf(input: TimeInput | undefined): HrTime {
    if (typeof input === 'number' && input <= otperformance.now()) {
      // A performance timestamp, moved to this span's epoch offset (the SDK's _performanceOffset).
      const offset = this.startMs - (this.startPerf + otperformance.timeOrigin);
      return addHrTimes(millisToHrTime(otperformance.timeOrigin), millisToHrTime(input + offset));
    }
    if (typeof input === 'number') return millisToHrTime(input);
    if (input instanceof Date) return millisToHrTime(input.getTime());
    if (isTimeInputHrTime(input)) return input;
    if (this.startTimeProvided) return millisToHrTime(Date.now());
    return addHrTimes(this.startTime, millisToHrTime(otperformance.now() - this.startPerf));
  }

  /** The SDK warns, with a stack, about every change to an ended span, and ignores it. */
  private endedWarning(): boolean {
    if (this.endedAt === undefined) return false;
    const error = new Error(`Operation attempted on ended Span {traceId: ${this.context.traceId}, spanId: ${this.context.spanId}}`);
    diag.warn(`Cannot execute the operation on ended Span {traceId: ${this.context.traceId}, spanId: ${this.context.spanId}}`, error);
    return true;
  }
}

/**
 * A span the sampler did not record: the API's own non-recording span (what `trace.wrapSpanContext`
 * makes, as the SDK returns one), of a subclass of the recorder's so that its children know its
 * ids valid and local without checking them. The API does not export the class; its instances
 * name it.
 */
const NonRecordingSpan = trace.wrapSpanContext(INVALID_SPAN_CONTEXT).constructor as new (context: SpanContext) => ApiSpan;
class UnrecordedSpan extends NonRecordingSpan {}

class RecordingTracer implements Tracer {
  constructor(
    private readonly shared: Shared,
    private readonly scope: { name: string; version?: string; schemaUrl?: string },
  ) {}

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = contextApi.active()): ApiSpan {
    if (options.root) ctx = trace.deleteSpan(ctx);
    const parentSpan = trace.getSpan(ctx);
    if (isTracingSuppressed(ctx)) {
      diag.debug('Instrumentation suppressed, returning Noop Span');
      return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    }
    const parent = parentSpan?.spanContext();
    const spanId = randomHex(16);
    // Read now: the next draw may refill the pool.
    const spanWords = drawnWord >= 0;
    const spanWord0 = spanWords ? poolWords[drawnWord] : 0;
    const spanWord1 = spanWords ? poolWords[drawnWord + 1] : 0;
    // A span of this provider (recorded or not) has valid ids by construction and is never remote;
    // any other parent (a remote one from `traceparent`, a wrapped context) is checked as the SDK
    // checks it.
    const recordedParent = parentSpan instanceof RecordedSpan ? parentSpan : undefined;
    const ownParent = recordedParent !== undefined || parentSpan instanceof UnrecordedSpan;
    const valid = parent !== undefined && (ownParent || trace.isSpanContextValid(parent));
    const traceId = valid ? parent.traceId : randomHex(32);
    const rootWords: TraceWords | undefined =
      !valid && drawnWord >= 0
        ? { w0: poolWords[drawnWord], w1: poolWords[drawnWord + 1], w2: poolWords[drawnWord + 2], w3: poolWords[drawnWord + 3] }
        : undefined;
    let traceState = valid ? parent.traceState : undefined;
    const kind = options.kind ?? SpanKind.INTERNAL;
    const links = options.links?.length ? options.links.map((link) => ({ context: link.context, attributes: sanitized(link.attributes) })) : [];
    const attributes = sanitized(options.attributes);
    // Under a parent of this provider, the default parent-based sampler's answer is the parent's
    // sampled flag (its local-parent samplers are the SDK's always-on and always-off, which answer
    // nothing else): the same decision without the sampler's two hex checks of the parent's ids.
    const sampling: SamplingResult =
      ownParent && this.shared.localParentDecides
        ? parent!.traceFlags & TraceFlags.SAMPLED
          ? RECORD_AND_SAMPLED
          : NOT_RECORD
        : this.shared.sampler.shouldSample(ctx, traceId, name, kind, attributes, links);
    traceState = sampling.traceState ?? traceState;
    const spanContext: SpanContext = {
      traceId,
      spanId,
      traceFlags: sampling.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE,
      traceState,
    };
    if (sampling.decision === SamplingDecision.NOT_RECORD) {
      diag.debug('Recording is off, propagating context in a non-recording span');
      return new UnrecordedSpan(spanContext);
    }
    // The sampler may add attributes (and may have changed the map it was given), as in the SDK.
    const initial = sampling.attributes ? sanitized(Object.assign(attributes, sampling.attributes)) : attributes;
    const span = new RecordedSpan(this.shared, this.scope, spanContext, name, kind, valid ? parent : undefined, initial, links, options.startTime);
    const traceWords = valid ? inheritedTraceWords(recordedParent, traceId) : rootWords;
    if (spanWords && traceWords !== undefined) {
      span.traceWords = traceWords;
      span.spanWord0 = spanWord0;
      span.spanWord1 = spanWord1;
      span.idWords = 1;
      if (recordedParent !== undefined) {
        span.parentWord0 = recordedParent.spanWord0;
        span.parentWord1 = recordedParent.spanWord1;
        span.idWords = 2;
      } else if (valid) {
        span.parentWord0 = wordOf(parent.spanId, 0);
        span.parentWord1 = wordOf(parent.spanId, 8);
        span.idWords = 2;
      }
    }
    this.shared.processor.onStart(span, ctx);
    return span;
  }

  startActiveSpan<F extends (span: ApiSpan) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: ApiSpan) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: ApiSpan) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: ApiSpan) => unknown>(name: string, a: F | SpanOptions, b?: F | Context, c?: F): ReturnType<F> | undefined {
    let options: SpanOptions | undefined;
    let ctx: Context | undefined;
    let fn: F;
    if (typeof a === 'function') fn = a;
    else if (typeof b === 'function') {
      options = a;
      fn = b;
    } else if (typeof c === 'function') {
      options = a;
      ctx = b;
      fn = c;
    } else return undefined;
    const parent = ctx ?? contextApi.active();
    const span = this.startSpan(name, options, parent);
    return contextApi.with(trace.setSpan(parent, span), fn as (span: ApiSpan) => ReturnType<F>, undefined, span);
  }
}

/** Calls every processor, as the SDK's MultiSpanProcessor does. */
function fanOut(processors: SpanProcessor[]): SpanProcessor {
  if (processors.length === 1) return processors[0];
  return {
    onStart: (span, ctx) => processors.forEach((p) => p.onStart(span, ctx)),
    onEnding: (span) => processors.forEach((p) => p.onEnding?.(span)),
    onEnd: (span) => processors.forEach((p) => p.onEnd(span)),
    forceFlush: async () => void (await Promise.all(processors.map((p) => p.forceFlush()))),
    shutdown: async () => void (await Promise.all(processors.map((p) => p.shutdown()))),
  };
}

export interface RecordingTracerProviderOptions {
  resource: Resource;
  sampler: Sampler;
  spanLimits?: SpanLimits;
  spanProcessors: SpanProcessor[];
}

export class RecordingTracerProvider implements TracerProvider {
  private readonly shared: Shared;
  private readonly tracers = new Map<string, RecordingTracer>();

  constructor(options: RecordingTracerProviderOptions) {
    this.shared = {
      resource: options.resource,
      sampler: options.sampler,
      localParentDecides: parentFlagDecides(options.sampler),
      limits: resolvedSpanLimits(options.spanLimits),
      processor: fanOut(options.spanProcessors),
    };
  }

  getTracer(name: string, version?: string, options?: TracerOptions): Tracer {
    const key = `${name}@${version || ''}:${options?.schemaUrl || ''}`;
    let tracer = this.tracers.get(key);
    if (!tracer) this.tracers.set(key, (tracer = new RecordingTracer(this.shared, { name, version, schemaUrl: options?.schemaUrl })));
    return tracer;
  }

  forceFlush(): Promise<void> {
    return this.shared.processor.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.shared.processor.shutdown();
  }
}

/** What the span exposes to processors and exporters: the SDK's `ReadableSpan`. */
export type { ReadableSpan };
