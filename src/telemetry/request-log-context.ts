import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { storage } from 'nestjs-pino/storage';

const REQUEST_LOG_STORE = createContextKey('nestjs-pino request store');
let shared = false;

/**
 * Keeps nestjs-pino's per-request logger in the OpenTelemetry context instead of an
 * AsyncLocalStorage of its own, while tracing is on.
 *
 * Why: every AsyncLocalStorage that is in use is copied onto every promise and callback the process
 * makes (Node 20 and 22 propagate each store by an async hook), and a governed call makes about 210
 * of them. Tracing's context manager is one such store and nestjs-pino's request store another:
 * the second costs about 0.1 µs a promise, some 5% of a call's CPU (docs/benchmarks.md). Carried
 * as a value of the trace context, the request's logger follows the request exactly as before
 * (the same `run` at the start of the request, the same `getStore` wherever a line is logged), and
 * tracing adds no store of its own to what the process propagates.
 *
 * What it deliberately does not do: anything while tracing is off (nestjs-pino's own store is then
 * the only one), or when the trace context does not propagate (no context manager registered):
 * then nestjs-pino keeps its own store, and its request logger still works.
 *
 * Answers whether the store is now shared.
 */
export function shareRequestLogStoreWithTraceContext(): boolean {
  if (shared) return true;
  const probe = createContextKey('probe');
  const propagates = context.with(ROOT_CONTEXT.setValue(probe, true), () => context.active().getValue(probe) === true);
  if (!propagates) return false;
  // nestjs-pino's middleware calls `storage.run(store, next)` once per request, and its loggers
  // call `storage.getStore()`: both are answered from the active trace context.
  const run = <R, A extends unknown[]>(store: unknown, fn: (...args: A) => R, ...args: A): R =>
    context.with(context.active().setValue(REQUEST_LOG_STORE, store), fn, undefined, ...args);
  Object.assign(storage, {
    run,
    getStore: () => context.active().getValue(REQUEST_LOG_STORE),
  });
  shared = true;
  return true;
}
