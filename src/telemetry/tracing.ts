import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IncomingMessage } from 'node:http';

/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables (the SDK reads them itself:
 * OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME,
 * OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES, ...). Off unless an exporter is configured.
 *
 * It must start before Nest, Fastify and pg are loaded: the instrumentations patch those modules
 * as they are required, so a module loaded earlier runs unpatched (main.ts imports this first).
 */
let sdk: NodeSDK | undefined;

/** Whether the environment asks for traces to be exported. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  if (exporters.length) return exporters.some((e) => e !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
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
  // Loaded only when tracing is on: a node without it pays nothing for the SDK.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof import('@fastify/otel');
  /* eslint-enable @typescript-eslint/no-require-imports */
  sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: 'capability-platform' }),
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    instrumentations: options.instrumentModules === false ? [] : [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => isOperatorProbe(req.url),
      }),
      // Fastify 5 is instrumented by Fastify's own plugin; @opentelemetry/instrumentation-fastify
      // stops at Fastify 4. Hook spans off: they would be one span per hook per request, ours
      // (request id, metrics) and Nest's, and say nothing a handler span does not.
      new FastifyOtelInstrumentation({ registerOnInitialization: true, instrumentHooks: false, ignorePaths: (r) => isOperatorProbe(r.url) }),
      // Only queries made inside a traced operation: the pool's own connects and the sweepers'
      // idle polling are not worth a trace each.
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return true;
}

/** Flushes what is buffered and stops (at the end of a graceful stop). */
export async function stopTracing(): Promise<void> {
  const s = sdk;
  sdk = undefined;
  await s?.shutdown();
}
