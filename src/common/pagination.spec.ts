import { ApiError } from './api-error';
import { decodeCursor, encodeCursor, pageOf } from './pagination';

describe('cursor pagination', () => {
  it('round-trips a sort key through an opaque cursor', () => {
    const cursor = encodeCursor(['2026-01-01T00:00:00.000Z', 'id-1']);
    expect(cursor).not.toContain('2026');
    expect(decodeCursor(cursor, 2)).toEqual(['2026-01-01T00:00:00.000Z', 'id-1']);
    expect(decodeCursor(undefined, 2)).toBeUndefined();
  });

  it.each(['%%%', Buffer.from('{"a":1}').toString('base64url'), encodeCursor(['a']), encodeCursor([{ x: 1 }, 'b'])])('refuses a cursor it did not issue: %s', (bad) => {
    expect(() => decodeCursor(bad, 2)).toThrow(ApiError);
    try {
      decodeCursor(bad, 2);
    } catch (err) {
      expect((err as ApiError).errors?.[0].path).toBe('cursor');
    }
  });

  it('trims the look-ahead row and points the cursor at the last item kept', () => {
    const rows = [1, 2, 3].map((n) => ({ n }));
    expect(pageOf(rows, 2, (r) => [r.n], (r) => r.n)).toEqual({ items: [1, 2], nextCursor: encodeCursor([2]) });
    expect(pageOf(rows, 3, (r) => [r.n], (r) => r.n)).toEqual({ items: [1, 2, 3], nextCursor: null });
  });
});
