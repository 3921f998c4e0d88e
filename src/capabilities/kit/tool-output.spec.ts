import * as tokenizer from 'gpt-tokenizer';
import { countTokens } from 'gpt-tokenizer';
import { MAX_PIECE_CHARS, MAX_SEGMENT_CHARS } from '../../runtime/output-budget';
import { count, fitList, fitsIn, largestFitting, longestFittingText, resultTokens } from './tool-output';

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

  it('hands the tokenizer no run of text longer than a piece, and stops past the limit', () => {
    // Byte-pair encoding of one pre-token is quadratic in its length, and unspaced CJK text is one
    // pre-token: 20,000 characters took 1.4 s to count whole, eight read_document calls held the
    // node for seconds (attack round 7).
    const cjk = Array.from({ length: 20_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join('');
    const spy = jest.spyOn(tokenizer, 'countTokens');
    try {
      expect(resultTokens(cjk)).toBeGreaterThan(1_000);
      expect(spy.mock.calls.length).toBeGreaterThan(20_000 / MAX_PIECE_CHARS - 1);
      expect(Math.max(...spy.mock.calls.map((c) => (c[0] as string).length))).toBeLessThanOrEqual(MAX_PIECE_CHARS);
      spy.mockClear();
      expect(fitsIn({ page: cjk }, 500)).toBe(false);
      // Past 500 tokens it stops: a few pieces, not the 20,000 characters.
      const read = spy.mock.calls.reduce((n, c) => n + (c[0] as string).length, 0);
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(MAX_SEGMENT_CHARS);
      expect(spy.mock.calls.every((c) => (c[0] as string).length <= MAX_PIECE_CHARS)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('counts in words that read right', () => {
    expect(count(1, 'document')).toBe('1 document');
    expect(count(0, 'document')).toBe('0 documents');
    expect(count(2, 'memory', 'memories')).toBe('2 memories');
  });

  it('fits a text to its budget when the rest of the result grows with it: its first estimate made shorter, then searched', () => {
    const chars = [...'lorem ipsum dolor sit amet, '.repeat(400)];
    // A result whose other parts grow with the text (a mark beside every few characters): the room
    // the estimate spends, measured with none of it, is too much, and only shortening finds what fits.
    for (const grows of [10, 3, 1]) {
      const make = (n: number) => ({ text: chars.slice(0, n).join(''), marks: ' z'.repeat(Math.floor(n / grows)) });
      for (const maxTokens of [300, 1200]) {
        const n = longestFittingText(chars, make, maxTokens);
        const longest = largestFitting(chars.length, (k) => fitsIn(make(k), maxTokens));
        // It fits, and is within the tenth a shortening step takes of the longest that does.
        expect([grows, maxTokens, fitsIn(make(n), maxTokens), n >= Math.floor(0.9 * longest)]).toEqual([grows, maxTokens, true, true]);
      }
    }
    // The whole text when it fits; nothing of it when not even its first character does.
    expect(longestFittingText(chars.slice(0, 10), (n) => chars.slice(0, n).join(''), 100)).toBe(10);
    // A first segment past the room (a long title beside the text): the few characters that fit.
    const titled = (n: number) => ({ title: 'word '.repeat(100), text: chars.slice(0, n).join('') });
    const few = longestFittingText(chars, titled, resultTokens(titled(0)) + 5);
    expect([few > 0, fitsIn(titled(few), resultTokens(titled(0)) + 5), fitsIn(titled(few + 1), resultTokens(titled(0)) + 5)]).toEqual([true, true, false]);
    const one = (n: number) => ({ text: 'a'.repeat(n), marks: ' z'.repeat(20 * n) });
    expect(longestFittingText(['a'], one, resultTokens(one(0)) + 1)).toBe(0);
  });
});
