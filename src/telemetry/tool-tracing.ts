import { Attributes, Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

// A proxy until tracing starts, then the provider's tracer: looked up once, not per span.
const productTracer = trace.getTracer('capability-platform');
const tracer = () => productTracer;

/** What a tool-call span says about the call (GenAI semantic conventions, plus ours under `cp.`). */
export interface ToolSpanAttributes {
  /** The name the model is offered (after overrides). */
  toolName: string;
  orgId: string;
  agentId: string;
  version?: number | 'latest';
  entryPoint?: string;
  runId?: string | null;
  callId?: string;
}

/**
 * Runs `fn` inside the span of one tool call, `execute_tool <name>` as the GenAI semantic
 * conventions name it. The guards, the tool and their database queries are its children. A thrown
 * error (a guard's refusal) ends the span with its code as `error.type`.
 */
export function inToolCallSpan<T>(a: ToolSpanAttributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': a.toolName,
    'gen_ai.tool.type': 'function',
    'cp.org.id': a.orgId,
    'cp.agent.id': a.agentId,
  };
  if (a.version !== undefined) attributes['cp.agent.version'] = String(a.version);
  if (a.entryPoint) attributes['cp.entry_point'] = a.entryPoint;
  if (a.runId) attributes['cp.run.id'] = a.runId;
  if (a.callId) attributes['gen_ai.tool.call.id'] = a.callId;
  return tracer().startActiveSpan(`execute_tool ${a.toolName}`, { kind: SpanKind.INTERNAL, attributes }, (span) => ended(span, fn));
}

/** A child span of whatever is active (a guard, the tool itself, persisting the outcome). */
export function inSpan<T>(name: string, fn: (span: Span) => Promise<T>, attributes?: Attributes): Promise<T> {
  return tracer().startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, (span) => ended(span, fn));
}

/**
 * The guards of one call as ONE span, `guards`, rather than a span per guard: a span is most of
 * what tracing costs a call (docs/benchmarks.md), and a guard's own span would only say that it
 * passed. `fn` pushes the name of each guard it passes; they are recorded in order as
 * `cp.guards.passed`, and a refusal ends the span with its code as `error.type`, as it does the
 * call's span.
 */
export function inGuardsSpan<T>(fn: (passed: string[]) => Promise<T>): Promise<T> {
  return inSpan('guards', async (span) => {
    const passed: string[] = [];
    try {
      return await fn(passed);
    } finally {
      span.setAttribute('cp.guards.passed', passed);
    }
  });
}

async function ended<T>(span: Span, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await fn(span);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    span.setAttribute('error.type', typeof code === 'string' ? code : ((err as Error).name ?? 'Error'));
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
