import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { TracerProvider } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { useFastOtlpTraceEncoding } from './otlp-trace-encoder';
import { shareRequestLogStoreWithTraceContext } from './request-log-context';
import { writeStartLine } from '../common/start-line';
import { pathWithoutTokens } from '../common/url-secrets';

/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables (the SDK reads them itself:
 * OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME,
 * OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES, ...). Off unless an exporter is configured.
 *
 * It must start before Nest, Fastify and pg are loaded: the instrumentations patch those modules
 * as they are required, so a module loaded earlier runs unpatched (main.ts imports this first).
 */
let sdk: NodeSDK | undefined;
/** The product's own tracer provider, when it records the spans (recording-tracer.ts). */
let recorder: (TracerProvider & { shutdown(): Promise<void> }) | undefined;

/** Characters of an attribute value kept when the operator sets no OTEL_*_ATTRIBUTE_VALUE_LENGTH_LIMIT. */
export const DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT = 1024;

/** Whether the environment asks for traces to be exported. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (exporters.length) return exporters.some((e) => e !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * The instrumentations a traced server runs, by the names OpenTelemetry's Node distributions give
 * them (the package's name without `@opentelemetry/instrumentation-`; Fastify's is `@fastify/otel`).
 */
export const INSTRUMENTATION_NAMES = ['fastify', 'pg', 'undici'] as const;
export type InstrumentationName = (typeof INSTRUMENTATION_NAMES)[number];

/**
 * OTEL_NODE_ENABLED_INSTRUMENTATIONS and OTEL_NODE_DISABLED_INSTRUMENTATIONS, read as
 * `@opentelemetry/auto-instrumentations-node` reads them: comma-separated names; when the first is
 * set, only the instrumentations it names run, and then those the second names are left out (a name
 * in both is left out). Every one runs when neither is set. A name this server has no instrumentation
 * for is reported (`unknown`) and otherwise ignored, as there.
 *
 * Why an operator would: the span of each statement is about a quarter of what tracing costs the
 * read-only call (docs/benchmarks.md, session 19); with `pg` left out, a request keeps its request,
 * tool-call, guards and tool spans.
 */
export function instrumentationsFromEnv(env: NodeJS.ProcessEnv): { enabled: Set<InstrumentationName>; unknown: string[] } {
  const known = new Set<string>(INSTRUMENTATION_NAMES);
  const unknown: string[] = [];
  const named = (variable: string): InstrumentationName[] | undefined => {
    const value = env[variable]?.trim();
    if (!value) return undefined;
    const names = value
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter(Boolean);
    for (const n of names) if (!known.has(n) && !unknown.includes(n)) unknown.push(n);
    return names.filter((n): n is InstrumentationName => known.has(n));
  };
  const only = named('OTEL_NODE_ENABLED_INSTRUMENTATIONS');
  const without = new Set(named('OTEL_NODE_DISABLED_INSTRUMENTATIONS') ?? []);
  const enabled = new Set((only ?? INSTRUMENTATION_NAMES).filter((n) => !without.has(n)));
  return { enabled, unknown };
}

/**
 * A warning while tracing starts, before the server's logger exists, as one of that logger's JSON
 * lines (pino's `warn`). Not through OpenTelemetry's `diag`, which is silent unless OTEL_LOG_LEVEL
 * is set: a name misspelt would leave an instrumentation out with nothing said. The server still
 * starts, as the OpenTelemetry distributions do with a name they do not know.
 */
function warnAtStart(env: NodeJS.ProcessEnv, msg: string): void {
  const level = (env.LOG_LEVEL ?? '').trim().toLowerCase();
  if (level === 'error' || level === 'fatal' || level === 'silent') return;
  writeStartLine(40, msg);
}

/** Probes and scrapes are many and say nothing about a request's path through the system. */
function isOperatorProbe(url: string | undefined): boolean {
  return url === '/metrics' || url === '/health' || url === '/health/ready' || Boolean(url?.startsWith('/metrics?') || url?.startsWith('/health?'));
}

/**
 * Starts the SDK when the environment asks for it; answers whether it did. `spanProcessors`
 * replaces the exporter the environment names (tests pass an in-memory one); `instrumentModules:
 * false` leaves http, Fastify and pg unpatched (a test process that other suites share).
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env, options: { spanProcessors?: SpanProcessor[]; instrumentModules?: boolean } = {}): boolean {
  if (sdk) return true;
  if (!options.spanProcessors && !tracingRequested(env)) return false;
  // Traces only: metrics are Prometheus's (/metrics), logs are JSON lines. The SDK would otherwise
  // export both over OTLP as well (its default), which cost a tenth of the tracing's CPU when
  // measured; an operator who wants them sets these variables.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  // A statement batched for concurrent requests is long (a group commit of 32 calls is about 8,000
  // characters of SQL, docs/benchmarks.md), and writing such texts into every export was the largest
  // single cost left in tracing. Attribute values are cut at 1,024 characters (every single-request
  // statement of this product fits) unless the operator sets a limit of their own.
  if (process.env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT === undefined && process.env.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT === undefined) {
    process.env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT = String(DEFAULT_ATTRIBUTE_VALUE_LENGTH_LIMIT);
  }
  // Loaded only when tracing is on: a node without it pays nothing for the SDK.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof import('@fastify/otel');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { encodeOnEndProcessorsFromEnv } = require('./encode-on-end') as typeof import('./encode-on-end');
  const { RecordingTracerProvider } = require('./recording-tracer') as typeof import('./recording-tracer');
  const { resourceFromEnv, samplerFromEnv, spanLimitsFromEnv } = require('./sdk-config') as typeof import('./sdk-config');
  const { trace } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  /* eslint-enable @typescript-eslint/no-require-imports */
  useFastOtlpTraceEncoding();
  const { enabled: instrumented, unknown } = instrumentationsFromEnv(env);
  // The default OTLP export encodes each span when it ends (encode-on-end.ts), and its spans (or
  // those of the processors a caller passes) are recorded by the product's own tracer provider
  // (recording-tracer.ts), with the sampler, limits and resource the SDK would use. NodeSDK then
  // makes no tracer provider of its own (no span processors) but still sets up the context, the
  // propagators and the instrumentations. Any other exporter setting is the SDK's own throughout.
  const serviceName = env.OTEL_SERVICE_NAME ? undefined : 'capability-platform';
  const recordTo = options.spanProcessors ?? encodeOnEndProcessorsFromEnv();
  const resource = recordTo ? resourceFromEnv(serviceName) : undefined;
  sdk = new NodeSDK({
    ...(recordTo ? { resource, autoDetectResources: false, spanProcessors: [] } : serviceName ? { serviceName } : {}),
    instrumentations:
      options.instrumentModules === false
        ? []
        : [
            // Each of them unless the operator leaves it out (instrumentationsFromEnv, above).
            // The HTTP side of a request is Fastify's own instrumentation (@opentelemetry/
            // instrumentation-fastify stops at Fastify 4), not the node:http one: with no HTTP span
            // above it, @fastify/otel makes the request's SERVER span itself and continues the
            // caller's `traceparent`. Both together made two spans of every request, and the node:http
            // one was the costlier (it binds the request's and the response's event emitters to the
            // context); measured in docs/benchmarks.md. Outgoing calls go through fetch (undici), not
            // node:http, so nothing was traced on that side either. One span per request: hook and
            // handler spans off (with Nest every request passes the same hooks and one handler).
            instrumented.has('fastify') &&
              new FastifyOtelInstrumentation({
                registerOnInitialization: true,
                instrumentHooks: false,
                instrumentHandler: false,
                ignorePaths: (r) => isOperatorProbe(r.url),
                // Named as the HTTP semantic conventions name a server span: method and route template.
                requestHook: (span, request) => {
                  const route = request.routeOptions.url;
                  span.updateName(route ? `${request.method} ${route}` : request.method);
                },
              }),
            // Only queries made inside a traced operation (the sweepers' idle polling is not worth a
            // trace each), and no span per pool checkout: a query's span already includes any wait.
            instrumented.has('pg') && new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
            // Outgoing HTTP (an MCP server's tools, a model, a JWKS): every one goes through the
            // egress policy's fetch (undici), which this instrumentation follows. A CLIENT span
            // under the operation that made the call, and `traceparent` sent on, so a slow tool
            // call is followed into the vendor's server. Only inside a trace, like pg.
            instrumented.has('undici') &&
              new UndiciInstrumentation({ requireParentforSpans: true, startSpanHook: (request) => redactedUrlAttributes(request.origin, request.path) }),
          ].filter((i) => i !== false),
  });
  if (unknown.length) {
    warnAtStart(
      env,
      `OTEL_NODE_ENABLED_INSTRUMENTATIONS or OTEL_NODE_DISABLED_INSTRUMENTATIONS names no instrumentation of this server, ignored: ${unknown.join(', ')} (it has ${INSTRUMENTATION_NAMES.join(', ')})`,
    );
  }
  sdk.start();
  if (recordTo && resource) {
    recorder = new RecordingTracerProvider({ resource, sampler: samplerFromEnv(), spanLimits: spanLimitsFromEnv(), spanProcessors: recordTo });
    trace.setGlobalTracerProvider(recorder);
  }
  shareRequestLogStoreWithTraceContext();
  return true;
}

/**
 * A URL's query and user information may carry a vendor's key (`?api_key=…`): their values are
 * not exported (`REDACTED`, as the HTTP semantic conventions suggest), their names are; so may its
 * path (`/api/mcp/s/<key>/mcp`): a segment shaped like a token is exported as `REDACTED`
 * (src/common/url-secrets.ts). Empty when there is nothing to hide, so the instrumentation's own
 * `url.full` stands.
 */
export function redactedUrlAttributes(origin: string, path: string): Record<string, string> {
  let url: URL;
  try {
    url = new URL(path, origin);
  } catch {
    return {};
  }
  const pathShown = pathWithoutTokens(url.pathname, 'REDACTED');
  const hidesPath = pathShown !== url.pathname;
  if (url.search.length <= 1 && !url.username && !url.password && !hidesPath) return {};
  if (url.username) url.username = 'REDACTED';
  if (url.password) url.password = 'REDACTED';
  const query = [...new Set(url.searchParams.keys())].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&');
  url.search = query;
  url.pathname = pathShown;
  return { 'url.full': url.toString(), 'url.query': query, ...(hidesPath ? { 'url.path': pathShown } : {}) };
}

/** Flushes what is buffered and stops (at the end of a graceful stop). */
export async function stopTracing(): Promise<void> {
  const s = sdk;
  const r = recorder;
  sdk = undefined;
  recorder = undefined;
  await Promise.all([s?.shutdown(), r?.shutdown()]);
}
