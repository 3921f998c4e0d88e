import { FixedWindowThrottlerStorage } from './fixed-window.storage';

describe('FixedWindowThrottlerStorage', () => {
  let now = 1_000_000;
  const store = () => new FixedWindowThrottlerStorage(() => now);
  beforeEach(() => (now = 1_000_000));

  describe('without a block duration (per key, per organization)', () => {
    it('counts hits up to the limit, refuses the next ones without counting them, and starts again with the next window', async () => {
      const s = store();
      for (let i = 1; i <= 3; i++)
        expect(await s.increment('k', 60_000, 3, 0, 'per-key')).toEqual({ totalHits: i, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
      now += 20_000;
      expect(await s.increment('k', 60_000, 3, 0, 'per-key')).toEqual({ totalHits: 4, timeToExpire: 40, isBlocked: true, timeToBlockExpire: 40 });
      expect(await s.increment('k', 60_000, 3, 0, 'per-key')).toMatchObject({ totalHits: 4, isBlocked: true });
      now += 40_000;
      expect(await s.increment('k', 60_000, 3, 0, 'per-key')).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
    });

    it('keeps keys, and throttler names, apart', async () => {
      const s = store();
      await s.increment('a', 60_000, 1, 0, 'per-key');
      expect((await s.increment('a', 60_000, 1, 0, 'per-key')).isBlocked).toBe(true);
      expect((await s.increment('b', 60_000, 1, 0, 'per-key')).isBlocked).toBe(false);
      expect((await s.increment('a', 60_000, 1, 0, 'per-org')).isBlocked).toBe(false);
    });

    it('allows nothing with a limit of 0', async () => {
      expect(await store().increment('k', 60_000, 0, 0, 'per-key')).toMatchObject({ totalHits: 1, isBlocked: true });
    });
  });

  describe('with a block duration (failed authentications)', () => {
    it('blocks from the hit that goes over the limit, for the block duration, then counts again from zero', async () => {
      const s = store();
      for (let i = 1; i <= 2; i++) expect(await s.increment('ip', 60_000, 2, 30_000, 'auth')).toMatchObject({ totalHits: i, isBlocked: false });
      expect(await s.increment('ip', 60_000, 2, 30_000, 'auth')).toEqual({ totalHits: 3, timeToExpire: 60, isBlocked: true, timeToBlockExpire: 30 });
      now += 10_000;
      expect(await s.increment('ip', 60_000, 2, 30_000, 'auth')).toEqual({ totalHits: 3, timeToExpire: 50, isBlocked: true, timeToBlockExpire: 20 });
      now += 20_000;
      expect(await s.increment('ip', 60_000, 2, 30_000, 'auth')).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
    });

    it('stays blocked past the end of the window while the block lasts', async () => {
      const s = store();
      await s.increment('ip', 10_000, 0, 60_000, 'auth');
      now += 30_000;
      expect(await s.increment('ip', 10_000, 0, 60_000, 'auth')).toMatchObject({ isBlocked: true, timeToBlockExpire: 30 });
    });
  });

  it('forgets windows that ended, so it holds only the keys seen lately', async () => {
    const s = store();
    for (let i = 0; i < 100; i++) await s.increment(`k${i}`, 1_000, 10, 0, 'per-key');
    expect(s.size).toBe(100);
    now += 61_000;
    await s.increment('fresh', 1_000, 10, 0, 'per-key');
    expect(s.size).toBe(1);
  });

  it('keeps one counter per key however many hits it counts (no per-hit bookkeeping)', async () => {
    const s = store();
    for (let i = 0; i < 50_000; i++) await s.increment('k', 60_000, 1_000_000, 0, 'per-key');
    expect(s.size).toBe(1);
    expect(await s.increment('k', 60_000, 1_000_000, 0, 'per-key')).toMatchObject({ totalHits: 50_001, isBlocked: false });
  });
});
