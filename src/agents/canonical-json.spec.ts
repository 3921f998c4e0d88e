import fc from 'fast-check';
import { canonicalize } from 'json-canonicalize';
import { canonicalJson } from './canonical-json';

/** Keys the engine orders apart (integer-like), that look up the prototype, or that the library treats apart (`toJSON`). */
const oddKey = fc.constantFrom(
  '0',
  '1',
  '10',
  '2',
  '4294967295',
  '-1',
  '01',
  '__proto__',
  'constructor',
  'toJSON',
  'hasOwnProperty',
  '',
  'é',
  'e\u0301',
  '\ud800',
  '😀',
  '\u2028',
);
const key = fc.oneof(fc.string(), oddKey, fc.string({ unit: 'binary' }));
const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(-0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 2 ** 53 + 2),
);
const leaf = fc.oneof(fc.string({ unit: 'binary' }), number, fc.boolean(), fc.constant(null));

/** JSON values, and objects wide enough (more than four keys) for the engine's own writing. */
const value = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('value'), { maxLength: 8 }),
    fc.array(leaf, { maxLength: 12 }),
    fc.dictionary(key, tie('value'), { maxKeys: 8 }),
    fc.dictionary(key, leaf, { minKeys: 5, maxKeys: 20 }),
  ),
})).value;

describe('canonicalJson', () => {
  it('writes what json-canonicalize writes, for any JSON value', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes parsed JSON, prototype-named and integer-like keys included, as the library does', () => {
    fc.assert(
      fc.property(value, (v) => {
        const parsed: unknown = JSON.parse(JSON.stringify(v));
        expect(canonicalJson(parsed)).toBe(canonicalize(parsed));
      }),
      { numRuns: 1000 },
    );
    const text = '{"b":1,"__proto__":{"x":[1,2]},"10":true,"2":null,"a":"\\ud800","constructor":{"toJSON":3,"z":1,"a":2}}';
    expect(canonicalJson(JSON.parse(text))).toBe('{"10":true,"2":null,"__proto__":{"x":[1,2]},"a":"\\ud800","b":1,"constructor":{"toJSON":3,"z":1,"a":2}}');
  });

  it('writes a parsed __proto__ key as an own key, in its place', () => {
    const parsed: unknown = JSON.parse('{"b":1,"__proto__":{"x":[1,2]},"a":[{"c":{}}]}');
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":[1,2]},"a":[{"c":{}}],"b":1}');
    expect(canonicalJson(parsed)).toBe(canonicalize(parsed));
  });

  it('sorts by UTF-16 code units and writes numbers in their shortest form (RFC 8785 appendix)', () => {
    const keys = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(canonicalJson(keys)).toBe(canonicalize(keys));
    expect(canonicalJson(keys)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    expect(canonicalJson({ numbers: [333333333.3333333, 1e30, 4.5, 0.002, 1e-27, -0], a: 1, b: 2, c: 3, d: 4 })).toBe(
      '{"a":1,"b":2,"c":3,"d":4,"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,0]}',
    );
  });

  it('keeps what the library does with values JSON does not have', () => {
    const date = new Date(0);
    const odd: Record<string, unknown> = { a: undefined, b: () => 1, c: date, d: [undefined, 1], e: 1, f: 2 };
    expect(canonicalJson(odd)).toBe(canonicalize(odd));
    // eslint-disable-next-line no-sparse-arrays
    const holes = [1, , 3];
    expect(canonicalJson(holes)).toBe(canonicalize(holes));
    for (const bad of [Infinity, -Infinity, NaN]) {
      expect(() => canonicalJson({ a: [bad] })).toThrow('Non-finite number');
      expect(() => canonicalJson({ a: 1, b: 2, c: 3, d: 4, e: bad })).toThrow('Non-finite number');
    }
    const boxed: unknown[] = [new String('abcdef'), new Number(5), Object.assign(new String('xy'), { k: 1, l: 2, m: 3, n: 4 })];
    expect(canonicalJson(boxed)).toBe(canonicalize(boxed));
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = [cycle];
    expect(() => canonicalJson(cycle)).toThrow('Circular reference');
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });
});
