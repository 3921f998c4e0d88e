import { OrgHolds } from './org-holds';

describe('OrgHolds', () => {
  it("holds at most max of an organization's requests, each organization its own, and frees a place once per release", () => {
    let max = 2;
    const holds = new OrgHolds(() => max);
    const a1 = holds.tryHold('a');
    const a2 = holds.tryHold('a');
    expect(a1 && a2).toBeDefined();
    expect(holds.tryHold('a')).toBeUndefined();
    expect(holds.tryHold('b')).toBeDefined();
    a1!();
    a1!();
    expect(holds.count('a')).toBe(1);
    expect(holds.tryHold('a')).toBeDefined();
    expect(holds.tryHold('a')).toBeUndefined();
    max = 3;
    expect(holds.tryHold('a')).toBeDefined();
  });

  it('forgets an organization with nothing held', () => {
    const holds = new OrgHolds(() => 1);
    holds.tryHold('a')!();
    expect((holds as unknown as { held: Map<string, number> }).held.size).toBe(0);
  });
});
