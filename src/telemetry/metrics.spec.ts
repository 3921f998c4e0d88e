import { Registry } from 'prom-client';
import { collectGarbage } from '../../test/support/gc';
import { collectStoppableDefaultMetrics } from './metrics';

/** Collections of every kind observed so far in `registry`, as a scrape reports them. */
async function collectionsSeen(registry: Registry): Promise<number> {
  const counts = [...(await registry.metrics()).matchAll(/^nodejs_gc_duration_seconds_count\{[^}]*\} (\d+)$/gm)];
  return counts.reduce((sum, m) => sum + Number(m[1]), 0);
}

/** A full collection, and time for the observer's entries to be delivered. */
async function collectAndSettle(): Promise<void> {
  collectGarbage();
  await new Promise((r) => setTimeout(r, 50));
}

describe('the default metrics', () => {
  it('observe collections and the event loop until stopped, and nothing after', async () => {
    const registry = new Registry();
    const stop = collectStoppableDefaultMetrics(registry);
    await collectAndSettle();
    const whileRunning = await collectionsSeen(registry);
    expect(whileRunning).toBeGreaterThan(0);
    expect(await registry.metrics()).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);

    stop();
    await collectAndSettle();
    expect(await collectionsSeen(registry)).toBe(whileRunning);
    stop(); // a second stop (a second shutdown hook) is harmless
  });

  it('leaves perf_hooks as it found it, also when collecting throws', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const perfHooks = require('node:perf_hooks') as typeof import('node:perf_hooks');
    const { monitorEventLoopDelay, PerformanceObserver } = perfHooks;
    const registry = new Registry();
    collectStoppableDefaultMetrics(registry)();
    expect(perfHooks.monitorEventLoopDelay).toBe(monitorEventLoopDelay);
    expect(perfHooks.PerformanceObserver).toBe(PerformanceObserver);
    // The same names twice in one registry: prom-client refuses the second set.
    expect(() => collectStoppableDefaultMetrics(registry)).toThrow(/already been registered/);
    expect(perfHooks.monitorEventLoopDelay).toBe(monitorEventLoopDelay);
    expect(perfHooks.PerformanceObserver).toBe(PerformanceObserver);
  });
});
