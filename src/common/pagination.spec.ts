import { ApiError } from './api-error';
import { decodeCursor, encodeCursor, PAGE_BYTE_BUDGET, pageByKey, pageByPosition, pageOf } from './pagination';

describe('cursor pagination', () => {
  it('round-trips a sort key through an opaque cursor', () => {
    const id = '0b6f3f5e-8f1c-4d7e-9a63-1f0c2f6c9d41';
    const cursor = encodeCursor(['2026-01-01T00:00:00.123456Z', id]);
    expect(cursor).not.toContain('2026');
    expect(decodeCursor(cursor, ['timestamp', 'uuid'])).toEqual(['2026-01-01T00:00:00.123456Z', id]);
    expect(decodeCursor(encodeCursor(['acme']), ['text'])).toEqual(['acme']);
    expect(decodeCursor(encodeCursor([7]), ['int'])).toEqual([7]);
    expect(decodeCursor(undefined, ['timestamp', 'uuid'])).toBeUndefined();
  });

  const twoParts = ['timestamp', 'uuid'] as const;
  it.each([
    ['not base64 JSON', '%%%', twoParts],
    ['an object', Buffer.from('{"a":1}').toString('base64url'), twoParts],
    ['too short', encodeCursor(['a']), twoParts],
    ['an object inside', encodeCursor([{ x: 1 }, 'b']), twoParts],
    ['not a timestamp', encodeCursor(['yesterday', '0b6f3f5e-8f1c-4d7e-9a63-1f0c2f6c9d41']), twoParts],
    ['not a uuid', encodeCursor(['2026-01-01T00:00:00Z', 'nope']), twoParts],
    ['an impossible date', encodeCursor(['2026-13-45T00:00:00Z', '0b6f3f5e-8f1c-4d7e-9a63-1f0c2f6c9d41']), twoParts],
    ['a day February does not have', encodeCursor(['2026-02-30T00:00:00Z', '0b6f3f5e-8f1c-4d7e-9a63-1f0c2f6c9d41']), twoParts],
    ['a fraction for an int', encodeCursor([1.5]), ['int'] as const],
    ['a huge int', encodeCursor([1e300]), ['int'] as const],
    ['a string for an int', encodeCursor(['1']), ['int'] as const],
    ['a number for text', encodeCursor([1]), ['text'] as const],
    ['a NUL in text', encodeCursor(['a\u0000b']), ['text'] as const],
  ])('refuses a cursor it did not issue: %s', (_what, bad, parts) => {
    expect(() => decodeCursor(bad, parts)).toThrow(ApiError);
    try {
      decodeCursor(bad, parts);
    } catch (err) {
      expect((err as ApiError).errors?.[0]).toMatchObject({ path: 'cursor', code: 'invalid_cursor' });
    }
  });

  it('trims the look-ahead row and points the cursor at the last item kept', () => {
    const rows = [1, 2, 3].map((n) => ({ n }));
    expect(
      pageOf(
        rows,
        2,
        (r) => [r.n],
        (r) => r.n,
      ),
    ).toEqual({ items: [1, 2], nextCursor: encodeCursor([2]) });
    expect(
      pageOf(
        rows,
        3,
        (r) => [r.n],
        (r) => r.n,
      ),
    ).toEqual({ items: [1, 2, 3], nextCursor: null });
  });

  it('pages an in-memory list sorted by key from the key of the last item', () => {
    const items = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
    const first = pageByKey(items, { limit: 2 }, (i) => i.id);
    expect(first).toEqual({ items: [{ id: 'a' }, { id: 'b' }], nextCursor: encodeCursor(['b']) });
    // An item removed at the boundary does not shift the next page.
    const next = pageByKey(
      items.filter((i) => i.id !== 'b'),
      { limit: 2, cursor: first.nextCursor! },
      (i) => i.id,
    );
    expect(next).toEqual({ items: [{ id: 'c' }, { id: 'd' }], nextCursor: encodeCursor(['d']) });
    expect(pageByKey(items, { limit: 2, cursor: encodeCursor(['d']) }, (i) => i.id)).toEqual({ items: [{ id: 'e' }], nextCursor: null });
    expect(pageByKey(items, {}, (i) => i.id)).toEqual({ items, nextCursor: null });
  });

  it('pages an in-memory list by position', () => {
    const items = [5, 4, 3, 2, 1];
    const first = pageByPosition(items, { limit: 2 });
    expect(first).toEqual({ items: [5, 4], nextCursor: encodeCursor([2]) });
    expect(pageByPosition(items, { limit: 2, cursor: encodeCursor([4]) })).toEqual({ items: [1], nextCursor: null });
    expect(pageByPosition(items, { limit: 2, cursor: encodeCursor([9]) })).toEqual({ items: [], nextCursor: null });
    expect(pageByPosition(items, {})).toEqual({ items, nextCursor: null });
  });

  describe('a page bounded in bytes as well as in items', () => {
    const big = (n: number) => ({ n, blob: 'x'.repeat(1024 * 1024) });
    const rows = [1, 2, 3, 4, 5, 6, 7].map(big);
    const page = (from: typeof rows, limit: number) =>
      pageOf(
        from,
        limit,
        (r) => [r.n],
        (r) => r,
      );

    it('ends early once its items pass the budget, keeping the item that passed it, and the cursor follows on', () => {
      const first = page(rows, 200);
      // Four items of a little over 1 MiB pass 4 MiB: the fourth is kept, the fifth waits.
      expect(first.items.map((i) => i.n)).toEqual([1, 2, 3, 4]);
      expect(first.nextCursor).toBe(encodeCursor([4]));
      expect(JSON.stringify(first.items).length).toBeLessThan(PAGE_BYTE_BUDGET + 1024 * 1024 + 1024);
      // The caller resumes after 4 (as a keyset query would) and reaches the end.
      const rest = page(rows.slice(4), 200);
      expect(rest).toEqual({ items: rows.slice(4), nextCursor: null });
    });

    it('holds at least one item, however large', () => {
      const huge = [{ n: 1, blob: 'x'.repeat(PAGE_BYTE_BUDGET * 2) }, big(2)];
      const first = page(huge, 50);
      expect(first.items.map((i) => i.n)).toEqual([1]);
      expect(first.nextCursor).toBe(encodeCursor([1]));
    });

    it('still ends at the limit first, and says so only when more rows exist', () => {
      expect(page(rows, 2)).toEqual({ items: rows.slice(0, 2), nextCursor: encodeCursor([2]) });
      expect(page(rows.slice(0, 3), 3)).toEqual({ items: rows.slice(0, 3), nextCursor: null });
      expect(
        pageOf(
          [],
          5,
          () => [],
          (r) => r,
        ),
      ).toEqual({ items: [], nextCursor: null });
    });

    it('points on past a page the database already ended at the budget, from how many rows it found', () => {
      // The database sent the four rows that fit of the six it matched: the page has a next one.
      expect(
        pageOf(
          rows.slice(0, 4),
          200,
          (r) => [r.n],
          (r) => r.n,
          PAGE_BYTE_BUDGET,
          6,
        ),
      ).toEqual({ items: [1, 2, 3, 4], nextCursor: encodeCursor([4]) });
      expect(
        pageOf(
          rows.slice(0, 4),
          200,
          (r) => [r.n],
          (r) => r.n,
          PAGE_BYTE_BUDGET,
          4,
        ).nextCursor,
      ).toBeNull();
    });

    it('counts bytes, not characters, and pages an in-memory list by position the same way', () => {
      const wide = ['é'.repeat(600_000), 'é'.repeat(600_000), 'é'.repeat(600_000), 'é'.repeat(600_000), 'z'];
      // 1.2 MB each in UTF-8 (600,000 characters): the fourth passes 4 MiB.
      const first = pageByPosition(wide, { limit: 50 });
      expect(first).toEqual({ items: wide.slice(0, 4), nextCursor: encodeCursor([4]) });
      expect(pageByPosition(wide, { limit: 50, cursor: first.nextCursor! })).toEqual({ items: ['z'], nextCursor: null });
      expect(pageByPosition(rows, { limit: 50 }, 10).items).toHaveLength(1);
    });
  });
});
