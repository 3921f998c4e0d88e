import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PinoLogger } from 'nestjs-pino';
import { storage, Store } from 'nestjs-pino/storage';
import pino from 'pino';
import { shareRequestLogStoreWithTraceContext } from './request-log-context';

/** A pino logger writing its lines into `lines`, as the request logger nestjs-pino's middleware makes. */
function requestLogger(lines: Record<string, unknown>[], id: string): pino.Logger {
  return pino({ base: undefined }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }).child({ req: { id } });
}

describe("nestjs-pino's request store, carried by the trace context", () => {
  afterAll(() => context.disable());

  it('is left alone while no context manager propagates the trace context', () => {
    expect(shareRequestLogStoreWithTraceContext()).toBe(false);
    expect(storage.run).toBe(AsyncLocalStorage.prototype.run);
  });

  describe('once tracing has registered its context manager', () => {
    beforeAll(() => {
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      expect(shareRequestLogStoreWithTraceContext()).toBe(true);
    });

    it("follows each request through awaits and timers, and concurrent requests never see each other's", async () => {
      const lines: Record<string, unknown>[] = [];
      const logger = new PinoLogger({});
      const request = (id: string, delays: number[]) =>
        storage.run(new Store(requestLogger(lines, id)), async () => {
          for (const ms of delays) {
            await sleep(ms);
            logger.info({ step: ms }, 'working');
          }
          return (storage.getStore() as Store).logger.bindings();
        });
      const [a, b] = await Promise.all([request('a', [5, 1, 3]), request('b', [1, 4, 1])]);
      expect(a).toEqual({ req: { id: 'a' } });
      expect(b).toEqual({ req: { id: 'b' } });
      expect(lines.map((l) => `${(l.req as { id: string }).id}${l.step as number}`).sort()).toEqual(['a1', 'a3', 'a5', 'b1', 'b1', 'b4']);
      expect(storage.getStore()).toBeUndefined();
    });

    it('survives spans and other context values set inside the request, and fields assigned mid-request', async () => {
      const lines: Record<string, unknown>[] = [];
      const other = createContextKey('other');
      const logger = new PinoLogger({});
      await storage.run(new Store(requestLogger(lines, 'r')), async () => {
        logger.assign({ userId: 'u1' });
        await context.with(context.active().setValue(other, 1), async () => {
          await sleep(1);
          logger.info('inside');
        });
      });
      expect(lines).toEqual([expect.objectContaining({ req: { id: 'r' }, userId: 'u1', msg: 'inside' })]);
    });

    it('is what the trace context says: a context without the request has no request logger', async () => {
      await storage.run(new Store(requestLogger([], 'r')), async () => {
        expect(storage.getStore()).toBeDefined();
        expect(context.with(ROOT_CONTEXT, () => storage.getStore())).toBeUndefined();
      });
    });
  });
});
