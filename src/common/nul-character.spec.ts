import { findNulCharacter, withoutNulCharacters } from './nul-character';

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
