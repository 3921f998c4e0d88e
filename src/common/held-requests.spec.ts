import type { AppConfig } from '../config/app-config';
import { heldRequestLimits } from '../config/http-config';
import { HeldRequests, heldRefusalMessage } from './held-requests';
import { OrgHolds } from './org-holds';

const held = (maxConnections: number, maxHeldRequests?: number, heldRequestsPerOrg?: number) =>
  new HeldRequests({ httpLimits: { maxBufferedBodyBytes: 1 << 20, maxConnections, maxHeldRequests, heldRequestsPerOrg } } as AppConfig);

describe('heldRequestLimits', () => {
  it('keeps a quarter of the connections for everything else and gives one organization a quarter of the rest, unless set', () => {
    expect(heldRequestLimits({ maxBufferedBodyBytes: 1, maxConnections: 2_000 })).toEqual({ max: 1_500, perOrg: 375 });
    expect(heldRequestLimits({ maxBufferedBodyBytes: 1, maxConnections: 1 })).toEqual({ max: 1, perOrg: 1 });
    expect(heldRequestLimits({ maxBufferedBodyBytes: 1, maxConnections: 100, maxHeldRequests: 40, heldRequestsPerOrg: 30 })).toEqual({ max: 40, perOrg: 30 });
    // Never more than there are connections, nor an organization more than the node.
    expect(heldRequestLimits({ maxBufferedBodyBytes: 1, maxConnections: 100, maxHeldRequests: 500, heldRequestsPerOrg: 900 })).toEqual({
      max: 100,
      perOrg: 100,
    });
  });
});

describe('HeldRequests', () => {
  it("refuses an organization past its share and everyone past the node's budget, and says which", () => {
    const budget = held(100, 5, 3);
    const a = [budget.tryHold('a'), budget.tryHold('a'), budget.tryHold('a')];
    expect(a.every(Boolean)).toBe(true);
    expect(budget.tryHold('a')).toBeUndefined();
    expect(budget.refusal('a')).toEqual({ limit: 'per_org', max: 3, setting: 'HTTP_HELD_REQUESTS_PER_ORG' });
    expect(budget.refusal('b')).toBeUndefined();
    const b = [budget.tryHold('b'), budget.tryHold('b')];
    expect(b.every(Boolean)).toBe(true);
    // The node's five are taken: an organization holding nothing is refused too.
    expect(budget.tryHold('c')).toBeUndefined();
    expect(budget.refusal('c')).toEqual({ limit: 'node', max: 5, setting: 'HTTP_HELD_REQUESTS_MAX' });
    expect(heldRefusalMessage(budget.refusal('c')!)).toContain('HTTP_HELD_REQUESTS_MAX');
    // A release counts once, however often it is called.
    a[0]!();
    a[0]!();
    expect(budget.tryHold('c')).toBeDefined();
    expect(budget.tryHold('c')).toBeUndefined();
  });

  it("holds a request outside the organization's share on the node's budget alone", () => {
    const budget = held(100, 4, 2);
    expect([budget.tryHold('a'), budget.tryHold('a')].every(Boolean)).toBe(true);
    expect(budget.tryHold('a')).toBeUndefined();
    // A tool call of the same organization: the node has room, so it is held, and counted there.
    const call = budget.tryHold('a', false);
    expect(call).toBeDefined();
    expect(budget.refusal('a', false)).toBeUndefined();
    expect(budget.tryHold('a', false)).toBeDefined();
    expect(budget.tryHold('b', false)).toBeUndefined();
    expect(budget.refusal('b', false)).toEqual({ limit: 'node', max: 4, setting: 'HTTP_HELD_REQUESTS_MAX' });
    call!();
    expect(budget.tryHold('b')).toBeDefined();
  });

  it("is taken with a kind's own place and given back with it, and not taken when the kind is full", () => {
    const budget = held(100, 4, 4);
    const kind = new OrgHolds(() => 2, budget);
    const other = new OrgHolds(() => 10, budget);
    const k1 = kind.tryHold('a');
    const k2 = kind.tryHold('a');
    expect(kind.tryHold('a')).toBeUndefined();
    // The kind's refusal took nothing of the budget: two places are left for another kind.
    const o = [other.tryHold('a'), other.tryHold('a')];
    expect(o.every(Boolean)).toBe(true);
    // The budget's refusal took nothing of the kind.
    expect(other.tryHold('a')).toBeUndefined();
    expect(other.count('a')).toBe(2);
    k1!();
    k2!();
    expect(kind.count('a')).toBe(0);
    expect(other.tryHold('a')).toBeDefined();
  });
});
