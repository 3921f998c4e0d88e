import { WindowBudget } from './window-budget';

describe('WindowBudget', () => {
  it('grants max uses a window, then says when the oldest leaves it, and counts nothing refused', () => {
    const budget = new WindowBudget(3, 600_000);
    expect([0, 10, 20].map((at) => budget.take('org', at))).toEqual([0, 0, 0]);
    expect(budget.take('org', 30)).toBe(600_000 - 30);
    expect(budget.take('org', 599_999)).toBe(1);
    // The first use has left the window: one more, and the next waits for the second to leave.
    expect(budget.take('org', 600_000)).toBe(0);
    expect(budget.take('org', 600_001)).toBe(9);
  });

  it('keeps each key apart', () => {
    const budget = new WindowBudget(1, 1000);
    expect(budget.take('a', 0)).toBe(0);
    expect(budget.take('b', 0)).toBe(0);
    expect(budget.take('a', 1)).toBe(999);
  });

  it('forgets keys whose uses all left the window once many are held, and keeps those still counting', () => {
    const budget = new WindowBudget(1, 1000);
    for (let i = 0; i < 1024; i++) budget.take(`idle-${i}`, 0);
    budget.take('busy', 500);
    budget.take('new', 1200);
    const held = (budget as unknown as { uses: Map<string, number[]> }).uses;
    expect([...held.keys()].sort()).toEqual(['busy', 'new']);
    expect(budget.take('busy', 1300)).toBe(200);
  });
});
