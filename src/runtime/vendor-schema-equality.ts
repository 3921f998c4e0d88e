import { _, KeywordCxt, KeywordDefinition } from 'ajv';

/** Takes `steps` from the budget of the validation under way (throwing past it). */
export type Charge = (steps: number) => void;

/**
 * `const` and `enum` as Ajv's, but with each comparison charged to the validation's budget. Ajv's
 * compare a value with every allowed one by deep equality, none of it counted: an `enum` of 100
 * arrays of 250 numbers, each differing from the arguments only in its first item (compared last),
 * reached through ten doublings of `$ref` (1,024 entries, within the 2,000 steps of a node's own
 * check), compiled in 10 to 17 ms and held the node's thread 210 to 430 ms a call (attack round
 * 19, Y-F1). A compared pair of values now takes a step, each name an object lists one, a string
 * compared whole one per 64 characters; allowed values that are not objects are looked up in a set.
 */
export function equalityKeywords(charge: Charge): KeywordDefinition[] {
  const equal = (a: unknown, b: unknown): boolean => {
    charge(1);
    // Two strings of one length are compared character by character.
    if (typeof a === 'string' && typeof b === 'string' && a.length === b.length) charge(Math.ceil(a.length / 64));
    if (a === b) return true;
    if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) {
      const other = b as unknown[];
      if (a.length !== other.length) return false;
      for (let i = a.length - 1; i >= 0; i--) if (!equal(a[i], other[i])) return false;
      return true;
    }
    const names = Object.keys(a);
    const others = Object.keys(b);
    charge(names.length + others.length);
    if (names.length !== others.length) return false;
    for (const name of names) if (!Object.prototype.hasOwnProperty.call(b, name)) return false;
    for (const name of names) if (!equal((a as Record<string, unknown>)[name], (b as Record<string, unknown>)[name])) return false;
    return true;
  };
  const member = (values: unknown[]) => {
    const plain = new Set(values.filter((v) => v === null || typeof v !== 'object'));
    const objects = values.filter((v) => v !== null && typeof v === 'object');
    return (data: unknown): boolean => {
      if (data === null || typeof data !== 'object') {
        // Looking a string up hashes it whole.
        charge(typeof data === 'string' ? 1 + Math.ceil(data.length / 64) : 1);
        return plain.has(data);
      }
      return objects.some((value) => equal(data, value));
    };
  };
  return [
    {
      keyword: 'const',
      error: { message: 'must be equal to constant', params: ({ schemaCode }) => _`{allowedValue: ${schemaCode}}` },
      code(cxt: KeywordCxt) {
        const same = cxt.gen.scopeValue('func', { ref: equal });
        cxt.fail(_`!${same}(${cxt.data}, ${cxt.schemaValue})`);
      },
    },
    {
      keyword: 'enum',
      schemaType: 'array',
      error: { message: 'must be equal to one of the allowed values', params: ({ schemaCode }) => _`{allowedValues: ${schemaCode}}` },
      code(cxt: KeywordCxt) {
        const values = cxt.schema as unknown[];
        if (values.length === 0) throw new Error('enum must have non-empty array');
        const isMember = cxt.gen.scopeValue('func', { ref: member(values) });
        cxt.fail(_`!${isMember}(${cxt.data})`);
      },
    },
  ];
}
