import { Context, diag, TraceFlags } from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv, getStringListFromEnv } from '@opentelemetry/core';
import { BatchSpanProcessor, ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';
import { encodeSpan, useFastOtlpTraceEncoding } from './otlp-trace-encoder';

/**
 * Encodes each sampled span to OTLP/protobuf when it ends and hands the batch processor behind it
 * the encoded bytes instead of the span.
 *
 * Why: the batch processor holds every span until its export (512 spans, or 5 seconds), long enough
 * for the young generation's collections to copy the span objects (their attributes, times, ids and
 * context) and promote them to the old generation, where the heap of a whole Nest application is
 * marked again and again. Encoded, a span is a few hundred bytes in a slab the collector never walks,
 * and the span object dies young. The export is the same request, byte for byte: the encoder writes
 * each span as the export would have, and the export copies the bytes in (otlp-trace-encoder.ts).
 *
 * What it deliberately does not do: batching, queue limits, timers, retries, shutdown order. The
 * SDK's BatchSpanProcessor behind it does all of that as configured by the OTEL_BSP_* variables;
 * this only changes what it holds. It is put only in front of an exporter that encodes with
 * otlp-trace-encoder.ts (OTLP over http/protobuf or gRPC): any other exporter gets spans.
 */
export class EncodeOnEndSpanProcessor implements SpanProcessor {
  private stopped = false;

  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    let encoded: ReadableSpan;
    try {
      // The processor and the serializer read only what EncodedSpan has (its context, resource and
      // scope; the serializer copies its bytes): it stands in for the span.
      encoded = encodeSpan(span) as unknown as ReadableSpan;
    } catch (err) {
      // Never let tracing fail the operation that ended the span: the span goes as it is, and the
      // export encodes it then (the serializer takes both).
      diag.error('encoding a span at its end failed; it is exported unencoded', err);
      encoded = span;
    }
    this.next.onEnd(encoded);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    this.stopped = true;
    return this.next.shutdown();
  }
}

/**
 * The span processors the SDK would make from the environment when it names one OTLP exporter over
 * http/protobuf or gRPC (the default): that exporter, behind a BatchSpanProcessor configured by the
 * OTEL_BSP_* variables, behind EncodeOnEndSpanProcessor. Undefined for any other setting (console,
 * zipkin, http/json, several exporters, none): the SDK then makes its own from the environment.
 * Reads `process.env`, as the SDK and the exporters do.
 */
export function encodeOnEndProcessorsFromEnv(): SpanProcessor[] | undefined {
  const exporters = [...new Set(getStringListFromEnv('OTEL_TRACES_EXPORTER') ?? [])].filter((e) => e !== 'null');
  if (exporters.length > 1 || (exporters.length === 1 && exporters[0] !== 'otlp')) return undefined;
  const protocol = getStringFromEnv('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? getStringFromEnv('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'grpc') return undefined;
  if (!useFastOtlpTraceEncoding()) return undefined;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const exporter: SpanExporter =
    protocol === 'grpc'
      ? new (require('@opentelemetry/exporter-trace-otlp-grpc') as typeof import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter()
      : new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  /* eslint-enable @typescript-eslint/no-require-imports */
  return [
    new EncodeOnEndSpanProcessor(
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: positive('OTEL_BSP_MAX_QUEUE_SIZE'),
        scheduledDelayMillis: positive('OTEL_BSP_SCHEDULE_DELAY'),
        exportTimeoutMillis: positive('OTEL_BSP_EXPORT_TIMEOUT'),
        maxExportBatchSize: positive('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
      }),
    ),
  ];
}

/** As the SDK reads these: a number above 0, else its default (and a warning). */
function positive(name: string): number | undefined {
  const value = getNumberFromEnv(name);
  if (value != null && value <= 0) {
    diag.warn(`${name} (${value}) is invalid, expected number greater than 0, using default.`);
    return undefined;
  }
  return value;
}
