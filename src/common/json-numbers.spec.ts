import fc from 'fast-check';
import {
  findNonFiniteNumber,
  findUnstorableNumber,
  MAX_NUMBER_GROWTH_CHARS,
  numbersGrowth,
  mayHoldNonFiniteNumber,
  mayHoldUnstorableNumber,
  printedGrowth,
} from './json-numbers';

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

describe('numbers PostgreSQL prints far longer than written', () => {
  it('tells how much longer jsonb prints a number, as PostgreSQL does', () => {
    // What `SELECT length(x::jsonb::text)` answers (checked against PostgreSQL 15 for 3,000 random doubles).
    expect(printedGrowth(5e-324)).toBe(326 - '5e-324'.length);
    expect(printedGrowth(1e308)).toBe(309 - '1e+308'.length);
    expect(printedGrowth(-1.5e-7)).toBe('-0.00000015'.length - '-1.5e-7'.length);
    expect(printedGrowth(1.2345e25)).toBe(26 - '1.2345e+25'.length);
    expect(printedGrowth(-1.7976931348623157e308)).toBe(310 - '-1.7976931348623157e+308'.length);
    for (const n of [0, -0, 1, -2.5, 123456.789, 1e20, 0.000001]) expect(printedGrowth(n)).toBe(0);
  });

  it('a literal the text hint passes grows by little more than it is long', () => {
    // `1e-9` (4 characters) is printed 0.000000001: within a body, what the hint lets through grows it about twice at most.
    fc.assert(
      fc.property(literal, (text) => {
        const n = JSON.parse(text) as number;
        if (Number.isFinite(n) && !mayHoldUnstorableNumber(`{"a":[${text}]}`)) expect(printedGrowth(n)).toBeLessThanOrEqual(text.length + 10);
      }),
      { numRuns: 2000 },
    );
    expect(mayHoldUnstorableNumber('{"a":1,"b":-2.5e3,"c":[0, -1.5E-12]}')).toBe(true);
    expect(mayHoldUnstorableNumber('{"id":"0b1e4d5e-9a7e-4c1e-8e2f-1e12e9e0e3e7","b":-2.5e3,"c":"1e99 in words"}')).toBe(false);
    expect(mayHoldUnstorableNumber('{"a":1,"b":-2.5e3,"c":[0.5]}')).toBe(false);
  });

  it('refuses a body whose numbers would grow by more than a body, naming the number that passes', () => {
    const per = printedGrowth(5e-324);
    const fits = Math.floor(MAX_NUMBER_GROWTH_CHARS / per);
    expect(findUnstorableNumber({ metadata: { a: Array(fits).fill(5e-324) } })).toBeUndefined();
    const found = findUnstorableNumber({ metadata: { a: Array(fits + 1).fill(5e-324) } });
    expect(found).toMatchObject({ path: `metadata.a[${fits}]`, code: 'numbers_too_long' });
    // One large number alone, and a past-range one first.
    expect(findUnstorableNumber({ n: 1e308, m: 5e-324 })).toBeUndefined();
    expect(findUnstorableNumber({ a: Array(fits + 1).fill(5e-324), b: Infinity })?.code).toBe('number_out_of_range');
  });
});

describe('numbersGrowth', () => {
  it("sums every number's printed growth, in arrays and objects, and stops just past the bound it is given", () => {
    expect(numbersGrowth({ a: [5e-324, 1, 'x', null, { b: 1e308 }], c: 2.5 })).toBe(printedGrowth(5e-324) + printedGrowth(1e308));
    expect(numbersGrowth(Infinity)).toBe(0);
    const many = new Array<number>(10_000).fill(5e-324);
    expect(numbersGrowth(many, 1_000)).toBeLessThanOrEqual(1_000 + printedGrowth(5e-324));
    expect(numbersGrowth(many)).toBe(10_000 * printedGrowth(5e-324));
  });
});
