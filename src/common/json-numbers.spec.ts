import fc from 'fast-check';
import { findNonFiniteNumber, mayHoldNonFiniteNumber } from './json-numbers';

/** A JSON number literal: sign, integer digits (no leading zero but for 0), fraction, exponent. */
const literal = fc
  .tuple(
    fc.constantFrom('', '-'),
    fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.integer({ min: 1, max: 9 }), fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 400 })).map(([d, r]) => `${d}${r}`),
    ),
    fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 20 }), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 100000 })), { nil: undefined }),
  )
  .map(([sign, int, frac, exp]) => `${sign}${int}${frac === undefined ? '' : `.${frac}`}${exp === undefined ? '' : `${exp[0]}${exp[1]}${exp[2]}`}`);

describe('numbers past the range of a double', () => {
  it('the text hint never misses a literal JSON.parse makes infinite', () => {
    let infinite = 0;
    fc.assert(
      fc.property(literal, (text) => {
        const n = JSON.parse(text) as number;
        if (Number.isFinite(n)) return;
        infinite++;
        expect(mayHoldNonFiniteNumber(`{"a":[${text}]}`)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(infinite).toBeGreaterThan(200);
    // The edges: the largest double, and the first literal past it, each way of writing it.
    expect(mayHoldNonFiniteNumber('1.7976931348623157e308')).toBe(true);
    expect(Number.isFinite(JSON.parse('1.7976931348623157e308'))).toBe(true);
    expect(JSON.parse('1' + '0'.repeat(308))).toBe(1e308);
    expect(mayHoldNonFiniteNumber('1' + '0'.repeat(308))).toBe(true);
  });

  it('plain numbers, words and ids cost no walk', () => {
    for (const text of [
      '{"a":1,"b":-2.5,"c":[0,12345678901234567890]}',
      '{"id":"0b1e4d5e-9a7e-4c1e-8e2f-1e5e9e0e3e7e","n":1e99,"m":1e-400}',
      '{"q":"refunds"}',
    ]) {
      expect(mayHoldNonFiniteNumber(text)).toBe(false);
    }
  });

  it('names the first one by its path; finite values, strings and NaN-free bodies pass', () => {
    expect(findNonFiniteNumber(JSON.parse('{"a":{"b":[1,{"c":-1e400}]}}'))).toEqual({
      path: 'a.b[1].c',
      code: 'number_out_of_range',
      message: 'a.b[1].c is a number beyond what a 64-bit float holds (about ±1.8e308)',
    });
    expect(findNonFiniteNumber(JSON.parse('1e999'))?.path).toBe('');
    expect(findNonFiniteNumber(JSON.parse('1e999'))?.message).toMatch(/^the body is/);
    expect(findNonFiniteNumber({ x: Infinity }, 'arguments')?.path).toBe('arguments.x');
    expect(findNonFiniteNumber(JSON.parse('{"a":1.7976931348623157e308,"b":"1e999","c":null,"d":[true]}'))).toBeUndefined();
  });
});
