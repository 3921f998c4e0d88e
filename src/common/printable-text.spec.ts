import { isPrintableText } from './printable-text';

describe('isPrintableText', () => {
  it.each(['support-bot runtime', 'José', 'Zürich ключ 鍵', 'deploy 🚀', '👩\u200d💻 team', 'a b'])('takes %p', (text) => {
    expect(isPrintableText(text)).toBe(true);
  });

  it.each([
    ['a right-to-left override', 'key\u202egnp.exe'],
    ['a bidi isolate', 'a\u2066b'],
    ['a line break', 'ops\nadmin'],
    ['a C1 control (a terminal escape)', 'x\u009b31m'],
    ['DEL', 'x\u007f'],
    ['a line separator', 'a\u2028b'],
    ['a zero-width space', 'ad\u200bmin'],
    ['a Hangul filler', 'admin\u3164'],
    ['a variation selector', 'a\ufe0fb'],
    ['a noncharacter', 'a\ufffeb'],
    ['a lone surrogate', 'a\ud800b'],
    ['a space at the end', 'admin '],
    ['a space at the start', ' admin'],
  ])('refuses %s', (_why, text) => {
    expect(isPrintableText(text)).toBe(false);
  });

  it('refuses what is not a string', () => {
    expect(isPrintableText(42)).toBe(false);
  });
});
