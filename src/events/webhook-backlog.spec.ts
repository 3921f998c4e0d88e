import { pendingCountedUpTo, resumeAt } from './webhook-backlog';

describe('the pending-delivery bound', () => {
  it('resumes at half the cap, rounded down, so a cap of 1 resumes only when nothing is pending', () => {
    expect(resumeAt(10_000)).toBe(5_000);
    expect(resumeAt(11)).toBe(5);
    expect(resumeAt(1)).toBe(0);
  });

  it('always leaves a gap between stopping and resuming', () => {
    for (const cap of [1, 2, 3, 10, 999, 10_000, 10_000_000]) expect(resumeAt(cap)).toBeLessThan(cap);
  });

  it('counts pending deliveries up to twice the cap: past the cap, never past a bound', () => {
    expect(pendingCountedUpTo(10_000)).toBe(20_000);
    expect(pendingCountedUpTo(5)).toBeGreaterThan(5);
  });
});
