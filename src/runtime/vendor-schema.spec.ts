import { compileVendorSchema, VendorValidator } from './vendor-schema';
import { INLINE_STEPS } from './vendor-schema-checks';

const compiled = (schema: Record<string, unknown>): VendorValidator => {
  const validator = compileVendorSchema(schema);
  if (typeof validator === 'string') throw new Error(validator);
  return validator;
};
/** Reached through `levels` doublings of `$ref`: 2^levels entries of `d0`. */
const doubled = (d0: unknown, levels: number) => {
  const definitions: Record<string, unknown> = { d0 };
  for (let i = 1; i <= levels; i++) definitions[`d${i}`] = { allOf: [{ $ref: `#/definitions/d${i - 1}` }, { $ref: `#/definitions/d${i - 1}` }] };
  return { type: 'object', definitions, properties: { x: { $ref: `#/definitions/d${levels}` } } };
};

describe("the node's own check within a few steps", () => {
  it('charges `enum` and `const` for what they compare: 100 allowed arrays of 250 numbers reached 32 times are not compared for free', () => {
    const data = Array.from({ length: 250 }, (_, i) => i);
    // Each allowed value differs from the arguments in its first item, which deep equality compares last.
    const allowed: unknown[] = Array.from({ length: 99 }, (_, k) => [1000 + k, ...data.slice(1)]);
    let reads = 0;
    const counting = new Proxy(data, { get: (target, key) => (reads++, Reflect.get(target, key)) });
    const enumOf = compiled(doubled({ enum: [...allowed, data] }, 5));
    // Was decided (valid) after reading the arguments 800,000 times, none of it charged: now left to the thread.
    expect(enumOf({ x: counting }, INLINE_STEPS)).toBeUndefined();
    expect(reads).toBeLessThan(2 * INLINE_STEPS);
    reads = 0;
    const constOf = compiled(doubled({ allOf: allowed.map(() => ({ not: { const: allowed[0] } })) }, 5));
    expect(constOf({ x: counting }, INLINE_STEPS)).toBeUndefined();
    expect(reads).toBeLessThan(2 * INLINE_STEPS);
    // The thread's check, within its larger budget, answers in full.
    expect(compiled({ type: 'object', properties: { x: { enum: [...allowed, data] } } })({ x: data })).toEqual([]);
  });

  it("charges a pattern's match by RE2's program on the node: a pattern of 3,003 instructions over 16,000 characters is left to the thread", () => {
    const costly = compiled({ type: 'object', properties: { x: { pattern: '(?:a?){1000}a{1000}$' } } });
    // Was decided on the node, holding it 1.2 to 2.0 s for 266 steps.
    expect(costly({ x: 'a'.repeat(16_000) }, INLINE_STEPS)).toBeUndefined();
    const usual = compiled({ type: 'object', properties: { x: { pattern: '^[a-z][a-z0-9_-]*$' } } });
    expect(usual({ x: 'a'.repeat(200) }, INLINE_STEPS)).toEqual([]);
    expect(usual({ x: 'A'.repeat(200) }, INLINE_STEPS)).toEqual([expect.objectContaining({ keyword: 'pattern', instancePath: '/x' })]);
  });
});

describe("the thread's check", () => {
  it("charges a pattern's match by RE2's program too: a pattern of 3,003 instructions over 40,000 characters is refused by its budget, not run for seconds", () => {
    const costly = compiled({ type: 'object', properties: { x: { pattern: '(?:a?){1000}a{1000}$' } } });
    // Was matched for 4 s and more (the thread ended at 2 s on every call).
    expect(costly({ x: 'a'.repeat(40_000) })).toEqual(expect.stringMatching(/^checking these arguments against it takes more than/));
    // A usual pattern over half a million characters is still checked.
    const usual = compiled({ type: 'object', properties: { x: { pattern: '^[a-z]+(?:-[a-z]+)*$' } } });
    expect(usual({ x: 'a'.repeat(500_000) })).toEqual([]);
    expect(usual({ x: `${'a'.repeat(500_000)}-` })).toEqual([expect.objectContaining({ keyword: 'pattern' })]);
  });

  it('counts the values of an array of half a million items (a 1 MiB body of `0,`s) and checks them', () => {
    const numbers = compiled({ type: 'object', properties: { x: { type: 'array', items: { type: 'integer' } } } });
    const x = new Array<unknown>(520_000).fill(0);
    // Was `RangeError: Maximum call stack size exceeded` counting them (every item an argument of one
    // push), which the thread threw on: the call answered 500.
    expect(numbers({ x })).toEqual([]);
    x[519_999] = 'a';
    expect(numbers({ x })).toEqual([expect.objectContaining({ instancePath: '/x/519999', keyword: 'type' })]);
  });
});

describe('`const` and `enum`', () => {
  it("compare as JSON Schema does: key order and 1 vs 1.0 do not matter, types and lengths do; errors read as Ajv's", () => {
    const schema = compiled({
      type: 'object',
      properties: {
        c: { const: { a: [1, { b: null }], s: 'x' } },
        e: { enum: ['one', 2, null, true, [1, 2], { k: 'v' }] },
        z: { const: 0 },
      },
    });
    expect(schema({ c: { s: 'x', a: [1.0, { b: null }] }, e: [1, 2], z: -0 })).toEqual([]);
    for (const e of ['one', 2, null, true, { k: 'v' }]) expect(schema({ e })).toEqual([]);
    for (const e of ['two', '2', 3, false, [2, 1], [1, 2, 3], { k: 'w' }, { k: 'v', l: 1 }, {}, []])
      expect(schema({ e })).toEqual([expect.objectContaining({ keyword: 'enum', message: 'must be equal to one of the allowed values' })]);
    for (const c of [{ a: [1, { b: null }] }, { a: [1, { b: 0 }], s: 'x' }, { a: [1, { b: null }], s: 'y' }, [1], 'x', null])
      expect(schema({ c })).toEqual([expect.objectContaining({ keyword: 'const', message: 'must be equal to constant', instancePath: '/c' })]);
    expect(compileVendorSchema({ type: 'object', properties: { e: { enum: [] } } })).toEqual(expect.stringMatching(/enum must have non-empty array/));
  });
});
