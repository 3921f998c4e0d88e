import { RecentCounts } from './recent-counts';

describe('RecentCounts', () => {
  let now: number;
  let calls: { orgId: string; ids: readonly string[]; settle: () => void; fail: (e: Error) => void }[];
  let stored: Map<string, number>;
  let counts: RecentCounts;

  beforeEach(() => {
    now = 1_000_000;
    calls = [];
    stored = new Map([
      ['a', 3],
      ['b', 5],
      ['c', 7],
    ]);
    counts = new RecentCounts(
      (orgId, ids) =>
        new Promise((resolve, reject) => {
          // What the database holds when the count is made, not when it is answered.
          const made = new Map(ids.map((id) => [id, stored.get(id) ?? 0]));
          calls.push({ orgId, ids, settle: () => resolve(made), fail: reject });
        }),
      1_000,
      () => now,
    );
  });

  const settleAll = async () => {
    while (calls.some((c) => c.settle !== undefined)) {
      const c = calls.find((x) => x.settle !== undefined)!;
      const settle = c.settle;
      (c as { settle?: () => void }).settle = undefined;
      settle();
      await new Promise((r) => setImmediate(r));
    }
  };

  it("counts once for all of an organization's reads that come while it counts, each answered", async () => {
    const reads = Array.from({ length: 10 }, () => counts.of('org', ['a', 'b']));
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    calls[0].settle();
    for (const read of reads) expect(Object.fromEntries(await read)).toEqual({ a: 3, b: 5 });
    expect(calls).toHaveLength(1);
  });

  it('answers a count made at most reuseMs ago, and counts again after', async () => {
    const first = counts.of('org', ['a']);
    calls[0].settle();
    expect((await first).get('a')).toBe(3);
    stored.set('a', 4);
    now += 1_000;
    expect((await counts.of('org', ['a'])).get('a')).toBe(3);
    expect(calls).toHaveLength(1);
    now += 1;
    const later = counts.of('org', ['a']);
    expect(calls).toHaveLength(2);
    calls[1].settle();
    expect((await later).get('a')).toBe(4);
  });

  it('counts only the endpoints a read lacks, and another organization beside, not after', async () => {
    const first = counts.of('org', ['a']);
    calls[0].settle();
    await first;
    const both = counts.of('org', ['a', 'b']);
    const elsewhere = counts.of('other', ['c']);
    expect(calls.map((c) => [c.orgId, c.ids])).toEqual([
      ['org', ['a']],
      ['org', ['b']],
      ['other', ['c']],
    ]);
    await settleAll();
    expect(Object.fromEntries(await both)).toEqual({ a: 3, b: 5 });
    expect((await elsewhere).get('c')).toBe(7);
  });

  it('waits for another count once, then counts what that one did not', async () => {
    const first = counts.of('org', ['a']);
    const second = counts.of('org', ['a', 'b']);
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    calls[0].settle();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(calls.map((c) => c.ids)).toEqual([['a'], ['b']]);
    calls[1].settle();
    expect(Object.fromEntries(await second)).toEqual({ a: 3, b: 5 });
  });

  it('a failed count fails its own read only; the reads waiting on it count for themselves', async () => {
    const first = counts.of('org', ['a']);
    const second = counts.of('org', ['a']);
    calls[0].fail(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(2);
    calls[1].settle();
    expect((await second).get('a')).toBe(3);
  });

  it('answers a read its own count even when that count took longer than reuseMs', async () => {
    const slow = counts.of('org', ['a']);
    now += 5_000;
    calls[0].settle();
    expect((await slow).get('a')).toBe(3);
  });
});
