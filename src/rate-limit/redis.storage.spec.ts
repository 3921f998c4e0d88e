import { Metrics } from '../telemetry/metrics';
import { RedisThrottlerStorage } from './redis.storage';
import { dropKeys, TEST_REDIS_URL, uniquePrefix } from '../../test/support/redis';

/** The fixed-window semantics of FixedWindowThrottlerStorage, on Redis (runs with TEST_REDIS_URL). */
(TEST_REDIS_URL ? describe : describe.skip)('RedisThrottlerStorage', () => {
  const prefix = uniquePrefix();
  let s: RedisThrottlerStorage;
  beforeAll(async () => {
    s = new RedisThrottlerStorage(TEST_REDIS_URL!, prefix, new Metrics());
    await s.ready();
  });
  afterAll(async () => {
    await s.close();
    await dropKeys(TEST_REDIS_URL!, prefix);
  });

  it('counts hits up to the limit and refuses the next ones without counting them', async () => {
    for (let i = 1; i <= 3; i++)
      expect(await s.increment('a', 60_000, 3, 0, 'per-key')).toEqual({ totalHits: i, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
    expect(await s.increment('a', 60_000, 3, 0, 'per-key')).toMatchObject({ totalHits: 4, isBlocked: true });
    expect(await s.increment('a', 60_000, 3, 0, 'per-key')).toMatchObject({ totalHits: 4, isBlocked: true });
  });

  it('keeps keys, and throttler names, apart', async () => {
    await s.increment('b', 60_000, 1, 0, 'per-key');
    expect((await s.increment('b', 60_000, 1, 0, 'per-key')).isBlocked).toBe(true);
    expect((await s.increment('c', 60_000, 1, 0, 'per-key')).isBlocked).toBe(false);
    expect((await s.increment('b', 60_000, 1, 0, 'per-org')).isBlocked).toBe(false);
  });

  it('allows nothing with a limit of 0', async () => {
    expect(await s.increment('zero', 60_000, 0, 0, 'per-key')).toMatchObject({ totalHits: 1, isBlocked: true, timeToExpire: 60 });
  });

  it('starts again with the next window', async () => {
    await s.increment('short', 300, 1, 0, 'per-key');
    expect((await s.increment('short', 300, 1, 0, 'per-key')).isBlocked).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(await s.increment('short', 300, 1, 0, 'per-key')).toMatchObject({ totalHits: 1, isBlocked: false });
  });

  it('with a block duration, blocks from the hit that goes over for that long, past the window, then counts from zero', async () => {
    for (let i = 1; i <= 2; i++) expect(await s.increment('ip', 200, 2, 600, 'auth')).toMatchObject({ totalHits: i, isBlocked: false });
    expect(await s.increment('ip', 200, 2, 600, 'auth')).toMatchObject({ totalHits: 3, isBlocked: true, timeToBlockExpire: 1 });
    await new Promise((r) => setTimeout(r, 300));
    // The window has ended; the block has not.
    expect(await s.increment('ip', 200, 2, 600, 'auth')).toMatchObject({ isBlocked: true });
    await new Promise((r) => setTimeout(r, 400));
    expect(await s.increment('ip', 200, 2, 600, 'auth')).toMatchObject({ totalHits: 1, isBlocked: false });
  });

  it('gives the last unit of a window to exactly one of many concurrent hits', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => s.increment('race', 60_000, 10, 0, 'per-key')));
    expect(results.filter((r) => !r.isBlocked)).toHaveLength(10);
  });
});
