import { context, isSpanContextValid, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { IncomingMessage } from 'node:http';
import { storage } from 'nestjs-pino/storage';

/** W3C Trace Context: version-traceid-parentid-flags; version ff is invalid, all-zero ids too. */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;

/**
 * The trace a request belongs to, for its log lines: the active span when tracing is on (which
 * continues the caller's `traceparent`), else the caller's `traceparent` itself, so that logs join
 * the caller's trace even on a node that exports no spans.
 */
export function traceFieldsOf(req: IncomingMessage): { trace_id?: string; span_id?: string } {
  const active = trace.getActiveSpan()?.spanContext();
  if (active && isSpanContextValid(active)) return { trace_id: active.traceId, span_id: active.spanId };
  const header = req.headers.traceparent;
  const m = typeof header === 'string' && header.length <= 512 ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  return m ? { trace_id: m[1] } : {};
}

/**
 * Runs `fn` outside whatever trace is active, as work of the node's own. A node's background work
 * (webhook deliveries, runs' steps, wake-ups) is started by whichever request's commit woke it and
 * then serves every organization: left in that request's context, another organization's webhook
 * deliveries and model calls carried the caller's `traceparent`, `tracestate` and `baggage` (any
 * header it chose) and were spans of its trace (attack round 22, AH-F1). Outside the request's
 * logger too: with tracing off it lives in nestjs-pino's own store (with tracing on, in the trace
 * context, src/telemetry/request-log-context.ts), and another organization's delivery or run step
 * logged that request's id and URL (attack round 22, AH-N2).
 */
export function detachedFromCaller<T>(fn: () => T): T {
  return storage.exit(() => context.with(ROOT_CONTEXT, fn));
}
