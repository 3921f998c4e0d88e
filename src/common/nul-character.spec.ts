import { findNulCharacter, storablePrefix, withoutNulCharacters } from './nul-character';

describe('U+0000', () => {
  it('is found in a string, a nested one or a key, by the path clients read', () => {
    expect(findNulCharacter('a\u0000')).toBe('');
    expect(findNulCharacter({ a: [{ b: 'x' }, { b: 'y\u0000' }] })).toBe('a[1].b');
    expect(findNulCharacter({ a: { 'k\u0000': 1 } })).toBe('a.k\\u0000');
    expect(findNulCharacter({ a: ['x', 1, null, true, { b: 'C:\\u0000' }] })).toBeUndefined();
    expect(findNulCharacter(undefined)).toBeUndefined();
  });

  it('is replaced by U+FFFD everywhere, and nothing else changes', () => {
    expect(withoutNulCharacters({ 'k\u0000': ['a\u0000b', 1, null, { c: true }] })).toEqual({ 'k\uFFFD': ['a\uFFFDb', 1, null, { c: true }] });
    expect(withoutNulCharacters('plain')).toBe('plain');
  });
});

describe('storablePrefix', () => {
  const emoji = '\u{1F600}';
  it('cuts between two characters, never inside a surrogate pair', () => {
    expect(storablePrefix('ab' + emoji + 'c', 3)).toBe('ab');
    expect(storablePrefix('ab' + emoji + 'c', 4)).toBe('ab' + emoji);
    expect(storablePrefix('ab' + emoji, 10)).toBe('ab' + emoji);
    expect(storablePrefix(emoji, 1)).toBe('');
  });
  it('replaces U+0000 and lone surrogates the text had, and keeps its length otherwise', () => {
    expect(storablePrefix('a\u0000b\uD800c', 100)).toBe('a\uFFFDb\uFFFDc');
    expect(storablePrefix('\uDC00abc', 2)).toBe('\uFFFDa');
    for (let max = 0; max < 12; max++) {
      const cut = storablePrefix('x' + emoji.repeat(3) + '\u0000' + emoji, max);
      expect([max, cut.isWellFormed(), cut.includes('\u0000'), cut.length <= max]).toEqual([max, true, false, true]);
    }
  });
});
