import { LruCache } from './lru-cache';

describe('LruCache', () => {
  it('keeps at most its capacity, forgetting the least recently used first', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now more recent than b
    cache.set('c', 3);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('replaces the value of a key it holds without growing', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('a', 2);
    expect(cache.size).toBe(1);
    expect(cache.get('a')).toBe(2);
  });

  it('also forgets the least recently used first past what its entries may weigh together, keeping the newest', () => {
    const cache = new LruCache<string, string>(100, { max: 10, of: (v) => v.length });
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    expect(cache.get('a')).toBe('xxxx');
    cache.set('c', 'xxxx');
    expect([cache.get('b'), cache.get('a'), cache.get('c'), cache.weighed]).toEqual([undefined, 'xxxx', 'xxxx', 8]);
    // Set again, a value is weighed again.
    cache.set('a', 'x');
    expect(cache.weighed).toBe(5);
    cache.set('big', 'x'.repeat(50));
    expect([cache.size, cache.get('big')?.length, cache.weighed]).toEqual([1, 50, 50]);
    cache.set('d', 'x');
    expect([cache.size, cache.get('big'), cache.weighed]).toEqual([1, undefined, 1]);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new LruCache(0)).toThrow('positive integer');
    expect(() => new LruCache(1.5)).toThrow('positive integer');
  });
});
