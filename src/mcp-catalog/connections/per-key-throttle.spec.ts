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
});
