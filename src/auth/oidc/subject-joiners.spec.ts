import { isVirama, joinersInContext } from './subject-joiners';

describe('subject joiners', () => {
  it('tells a virama (combining class 9) from other marks and letters, in scripts old and new', () => {
    // Devanagari, Malayalam, Sinhala al-lakuna, Balinese adeg adeg (a spacing mark), Brahmi, Kawi (Unicode 15).
    for (const virama of ['\u094d', '\u0d4d', '\u0dca', '\u1b44', '\u{11046}', '\u{11f42}']) {
      expect([virama, isVirama(virama)]).toEqual([virama, true]);
    }
    // A nukta (class 7), the marks of classes 8 and 10 the test compares with, an acute (230), a vowel sign (0), letters.
    for (const other of ['\u093c', '\u3099', '\u05b0', '\u0301', '\u093f', '\u0915', 'a', '\u200d']) {
      expect([other, isVirama(other)]).toEqual([other, false]);
    }
  });

  it('lets text without joiners through untouched', () => {
    expect(joinersInContext('alice')).toBe(true);
    expect(joinersInContext('\u{1f469}\u{1f469}')).toBe(true);
  });
});
