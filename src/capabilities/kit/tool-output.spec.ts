import { countTokens } from 'gpt-tokenizer';
import { count, fitList, fitsIn, largestFitting, resultTokens } from './tool-output';

describe('tool output helpers', () => {
  it('measures a result as the executor does: a string as itself, anything else as its JSON text', () => {
    expect(resultTokens('hello world')).toBe(countTokens('hello world'));
    expect(resultTokens({ a: ['hello world'] })).toBe(countTokens('{"a":["hello world"]}'));
  });

  it('measures text that spells a special token as ordinary text instead of throwing', () => {
    expect(resultTokens('a <|endoftext|> b')).toBe(countTokens('a <|endoftext|> b', { disallowedSpecial: new Set() }));
    expect(resultTokens({ page: '<|im_start|>' })).toBeGreaterThan(3);
  });

  it('answers whether a result fits exactly as measuring it would, at, under and over the limit', () => {
    const values: unknown[] = ['', 'hello world', 'a <|endoftext|> b', { a: ['hello world'] }, 'word '.repeat(300), { text: 'naïve café 🙂 '.repeat(40) }];
    for (const value of values) {
      const tokens = resultTokens(value);
      for (const limit of [0, 1, tokens - 1, tokens, tokens + 1, 10_000]) {
        if (limit < 0) continue;
        expect([value, limit, fitsIn(value, limit)]).toEqual([value, limit, tokens <= limit]);
      }
    }
  });

  it('finds the largest n that fits, trying the whole first', () => {
    const calls: number[] = [];
    const upTo = (limit: number) => (n: number) => (calls.push(n), n <= limit);
    expect(largestFitting(10, upTo(100))).toBe(10);
    expect(calls).toEqual([10]);
    for (const limit of [0, 1, 5, 9]) expect(largestFitting(10, upTo(limit))).toBe(limit);
    expect(largestFitting(0, upTo(0))).toBe(0);
  });

  it('keeps the longest prefix of a list that fits, telling make how many were left out', () => {
    const items = Array.from({ length: 50 }, (_, i) => `item number ${i} with some words`);
    const whole = fitList(items, 10_000, (kept, omitted) => ({ kept, omitted }));
    expect(whole).toEqual({ kept: items, omitted: 0 });
    const cut = fitList(items, 100, (kept, omitted) => ({ kept, omitted }));
    expect(cut.kept).toEqual(items.slice(0, cut.kept.length));
    expect(cut.omitted).toBe(50 - cut.kept.length);
    expect(resultTokens(cut)).toBeLessThanOrEqual(100);
    expect(resultTokens({ kept: items.slice(0, cut.kept.length + 1), omitted: cut.omitted - 1 })).toBeGreaterThan(100);
  });

  it('counts in words that read right', () => {
    expect(count(1, 'document')).toBe('1 document');
    expect(count(0, 'document')).toBe('0 documents');
    expect(count(2, 'memory', 'memories')).toBe('2 memories');
  });
});
