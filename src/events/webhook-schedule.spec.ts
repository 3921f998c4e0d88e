import { MAX_RETRY_DELAY_MS, nextAttemptAt } from './webhook-schedule';

describe('webhook retry schedule', () => {
  const policy = { baseMs: 5_000, windowMs: 86_400_000 };
  const created = new Date('2026-01-01T00:00:00Z');

  it('waits three times longer after each failure, up to an hour, with jitter of ±20 %', () => {
    const at = (attempt: number, random: number, now = created) => nextAttemptAt(policy, attempt, created, now, () => random)!.getTime() - now.getTime();
    expect(at(1, 0.5)).toBe(5_000);
    expect(at(2, 0.5)).toBe(15_000);
    expect(at(3, 0.5)).toBe(45_000);
    expect(at(1, 0)).toBe(4_000);
    expect(at(1, 1)).toBe(6_000);
    expect(at(40, 0.5)).toBe(MAX_RETRY_DELAY_MS);
  });

  it('keeps trying for the whole window (at least an hour by default), then gives up', () => {
    let now = created;
    let attempts = 1;
    for (;;) {
      const next = nextAttemptAt(policy, attempts, created, now, () => 0.5);
      if (!next) break;
      expect(next.getTime()).toBeGreaterThan(now.getTime());
      now = next;
      attempts++;
    }
    expect(now.getTime() - created.getTime()).toBe(policy.windowMs);
    expect(attempts).toBeGreaterThan(10);
    expect(attempts).toBeLessThan(40);
  });

  it("puts the last attempt at the window's end, never past it", () => {
    const now = new Date(created.getTime() + policy.windowMs - 1_000);
    expect(nextAttemptAt(policy, 20, created, now, () => 0.5)).toEqual(new Date(created.getTime() + policy.windowMs));
    expect(nextAttemptAt(policy, 20, created, new Date(created.getTime() + policy.windowMs), () => 0.5)).toBeUndefined();
  });
});
