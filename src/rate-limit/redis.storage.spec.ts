import { Metrics } from '../telemetry/metrics';
import { RedisThrottlerStorage } from './redis.storage';
import { dropKeys, startOwnRedis, TEST_REDIS_URL, uniquePrefix } from '../../test/support/redis';

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

/**
 * A Redis that stops answering on a live connection (paused, stalled; the connection stays open): a
 * hit that timed out left its command in the client's queue until a reply came, and a hit was sent
 * again every second, so the hits of a 250 ms window each second waited out the timeout and their
 * commands piled up for as long as the stall lasted (640 after 20 s at 316 hits a second, attack
 * round 20, AB-F5). The connection is now dropped at the first timeout and made again: nothing waits
 * on the stalled one, and hits are counted in process until Redis answers a new connection.
 */
(TEST_REDIS_URL ? describe : describe.skip)('RedisThrottlerStorage, Redis stalled on a live connection', () => {
  it('drops the connection at the first hit that times out, counts in process without waiting meanwhile, and uses Redis again once it answers', async () => {
    const redis = await startOwnRedis();
    const s = new RedisThrottlerStorage(redis.url, uniquePrefix(), new Metrics());
    try {
      await s.ready();
      expect((await s.increment('k', 60_000, 100, 0, 'per-key')).totalHits).toBe(1);
      redis.pause();
      const waits: number[] = [];
      const until = Date.now() + 3500;
      while (Date.now() < until) {
        await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const started = performance.now();
            await s.increment(`k${waits.length}-${i}`, 60_000, 100, 0, 'per-key');
            waits.push(performance.now() - started);
          }),
        );
        await new Promise((r) => setTimeout(r, 50));
      }
      // The first 20 hits waited out the 250 ms timeout; none after them (was 20 more every second).
      expect(waits.filter((ms) => ms >= 200).length).toBeLessThanOrEqual(20);
      expect(s.connected).toBe(false);
      redis.resume();
      await s.ready(10_000);
      expect((await s.increment('k', 60_000, 100, 0, 'per-key')).totalHits).toBe(2);
    } finally {
      redis.resume();
      await s.close();
      await redis.stop();
    }
  }, 30_000);
});
