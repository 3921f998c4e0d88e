import { PerKeyThrottle } from './per-key-throttle';

describe('PerKeyThrottle', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs a flood of requests for one key once at once and once at the end of the interval, with the latest work', () => {
    const throttle = new PerKeyThrottle(30_000);
    const runs: string[] = [];
    // A server sending list_changed every 10 ms for 10 s wrote ~300 audited refreshes.
    for (let i = 0; i < 1000; i++) {
      throttle.request('org/c1', () => runs.push(`c1-${i}`));
      jest.advanceTimersByTime(10);
    }
    expect(runs).toEqual(['c1-0']);
    jest.advanceTimersByTime(20_000);
    expect(runs).toEqual(['c1-0', 'c1-999']);
    // Quiet for a whole interval: nothing more, and the next request runs at once.
    jest.advanceTimersByTime(60_000);
    expect(runs).toHaveLength(2);
    throttle.request('org/c1', () => runs.push('later'));
    expect(runs.at(-1)).toBe('later');
    throttle.close();
  });

  it('throttles each key on its own', () => {
    const throttle = new PerKeyThrottle(30_000);
    const runs: string[] = [];
    throttle.request('a', () => runs.push('a1'));
    throttle.request('b', () => runs.push('b1'));
    throttle.request('a', () => runs.push('a2'));
    expect(runs).toEqual(['a1', 'b1']);
    jest.advanceTimersByTime(30_000);
    expect(runs).toEqual(['a1', 'b1', 'a2']);
    throttle.close();
  });

  it('makes a key that keeps asking wait twice as long each time, up to its longest interval, and forgets it after a quiet interval', () => {
    const throttle = new PerKeyThrottle(30_000, 600_000);
    const at: number[] = [];
    const start = Date.now();
    const seconds = () => (Date.now() - start) / 1000;
    // A server sending list_changed every second for an hour: was a listing every 30 s, 120 in all.
    for (let i = 0; i < 3600; i++) {
      throttle.request('org/c1', () => at.push(seconds()));
      jest.advanceTimersByTime(1000);
    }
    expect(at.slice(0, 7)).toEqual([0, 30, 90, 210, 450, 930, 1530]);
    expect(at).toHaveLength(10);
    // One that waits just past each hold backs off as well.
    const other: number[] = [];
    const from = Date.now();
    for (let i = 0; i < 6; i++) {
      throttle.request('org/c2', () => other.push((Date.now() - from) / 1000));
      jest.advanceTimersByTime(Math.min(30_000 * 2 ** i, 600_000) + 1000);
    }
    expect(other).toEqual([0, 31, 92, 213, 454, 935]);
    // Quiet for the hold and an interval after it: forgotten, the next hold is the shortest again.
    jest.advanceTimersByTime(1_200_000);
    throttle.request('org/c2', () => other.push(-1));
    throttle.request('org/c2', () => other.push(-2));
    jest.advanceTimersByTime(30_000);
    expect(other.slice(-2)).toEqual([-1, -2]);
    throttle.close();
  });
});
