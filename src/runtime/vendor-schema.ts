import Ajv, { _, ErrorObject, KeywordCxt, Options, str } from 'ajv';
import { useFunc } from 'ajv/dist/compile/util';
import ucs2length from 'ajv/dist/runtime/ucs2length';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { canonicalJson } from '../agents/canonical-json';
import { boundErrors, type FieldError } from '../common/api-error';
import { RE2JS } from 're2js';
import { isUrl } from './url-format';
import { equalityKeywords } from './vendor-schema-equality';

/**
 * Checks arguments against a vendor's input schema: the errors found (empty: valid), or why the
 * schema cannot be used to check them (the call is then refused, never let through unchecked).
 */
export type VendorValidator = {
  (args: Record<string, unknown>): ErrorObject[] | string;
  /** Within `steps` only: undefined when they do not decide (too few, or the stack ran out), and nothing is answered. */
  (args: Record<string, unknown>, steps: number): ErrorObject[] | string | undefined;
};

/** Calls of compiled schema functions one validation may make: a floor, and so many per value of the arguments. */
export const WORK_FLOOR = 100_000;
export const WORK_PER_VALUE = 32;
/**
 * What making an error costs, in steps: building it takes many times what a step of the rest does,
 * and a union's branches each make one before one passes. Legitimate unions of dozens of types stay
 * within the budget (see the resolver's tests); more per error would refuse them.
 */
export const ERROR_STEPS = 8;
/**
 * A keyword that reads a string (its length, a format, a pattern) reads it whole, so it costs a step
 * per CHARS_PER_STEP characters, and the budget has room for each string to be read STRING_READS
 * times: an `allOf` of 3,000 `minLength`s over one string of 500,000 characters held the node 6.4 s,
 * of 3,000 `format: "uri"` over 1 MB 10.3 s, each read one step (attack round 18, X-F4).
 */
const CHARS_PER_STEP = 64;
export const STRING_READS = 8;
/**
 * The budget of the validation under way (validation is synchronous): what reading a string is
 * charged to; `few` when it is the node's own check within a few steps, not the thread's.
 */
let reading: { left: number; few: boolean } | undefined;
function read(text: string, steps = 0): void {
  charge(steps + Math.ceil(text.length / CHARS_PER_STEP));
}
function charge(steps: number): void {
  if (reading && (reading.left -= steps) < 0) throw OUT_OF_WORK;
}
/**
 * What starting a match on RE2 (re2js) costs, in steps, whatever the text: about 2 µs, where a step
 * of the rest is a few dozen ns. An `allOf` of 300 `patternProperties` over 60,000 member names
 * (650 KB) held the node 4.8 s within the budget (attack round 18, X-F5).
 */
export const MATCH_STEPS = 16;
/**
 * On the node's own thread a match is charged its worst case, a step per MATCH_WORK_PER_STEP
 * characters times instructions of RE2's program (re2js matches in up to 150 ns for each):
 * `(?:a?){1000}a{1000}$` (3,003 instructions, compiled in 10 ms) held the node 1.2 to 2.0 s over
 * 16,000 characters charged 266 steps (attack round 19, Y-F2). The thread is charged a step per
 * THREAD_MATCH_WORK_PER_STEP (the worst case would refuse usual patterns over long texts): over
 * 40,000 characters that pattern ran to the 2 s limit on every call, ending the thread (Y-F4). */
export const MATCH_WORK_PER_STEP = 4;
export const THREAD_MATCH_WORK_PER_STEP = 64;
/**
 * Characters of canonical JSON `uniqueItems` writes per step (about 50 ns a character): a pass over
 * a megabyte of strings takes half of what the budget grants for reading them, so one passes.
 */
export const CANONICAL_CHARS_PER_STEP = 4;
/** Errors one validation may hold at once: past them it stops, answering that there are more (no one reads 10,000). */
export const MAX_ERRORS = 10_000;

const WORK = 'vendorSchemaWork';
const OUT_OF_WORK = new Error('out of validation work');
const TOO_MANY_ERRORS = new Error('too many errors');
const ENDLESS = 'it refers to itself without end';
const FUNCTION_START = /return function validate\d+\([^)]*\)\{/;

/**
 * Validation runs on the one worker thread every organization's checks share (it ran on the
 * thread that serves every request until row 193 of docs/security.md; see vendor-schema-checks.ts),
 * against a schema a vendor's server wrote: it must take time linear in the arguments. Three
 * things did not.
 *
 * A `pattern` (or a key of `patternProperties`) ran on V8's backtracking engine: `^(a+)+$` held the
 * node 15 s at 31 characters, `^(a|a)*$` 5 s at 29, and `\s+$` (in many real schemas) 21 s at
 * 150,000 spaces. Patterns run on RE2 (re2js), which matches in time linear in the text whatever
 * the pattern; one it cannot run (a lookaround, a backreference) makes the schema unusable, like
 * one that does not compile: its tool's calls are refused, naming the pattern, rather than checked
 * less or not at all.
 *
 * `uniqueItems` compared objects pair by pair: 30,000 of them held it 26 s. It is checked here in
 * one pass over each item's canonical JSON (RFC 8785: the key order and 1 vs 1.0 do not matter,
 * as JSON Schema's equality has it).
 *
 * `$ref`: Ajv compiles each referenced schema (that itself refers to others) into a function and
 * calls it at every reference, with no memory of what it already checked. A 2.8 KB schema whose
 * definition `d_i` was `allOf: [{$ref: d_i-1}, {$ref: d_i-1}]` made 2^32 calls for `{}` (16 s);
 * the same doubling through `properties` grows with the depth of the arguments, and a reference to
 * itself in place (`allOf: [{$ref: "#"}]`) never ends. Every compiled function counts its calls
 * against a budget, a floor plus so many per value of the arguments (legitimate schemas, unions
 * of dozens of referenced types included, stay far below it); past it, or past the stack, the
 * schema cannot be used for these arguments and the call is refused, saying why.
 */
export function compileVendorSchema(inputSchema: Record<string, unknown>): VendorValidator | string {
  const { $schema: dialect, ...schema } = inputSchema;
  const work = {
    left: 0,
    few: false,
    out: OUT_OF_WORK,
    many: TOO_MANY_ERRORS,
    // `minProperties` and `maxProperties` list the object's names: a step a name (see counted).
    names: (value: object): number => {
      const count = Object.keys(value).length;
      if ((work.left -= count) < 0) throw OUT_OF_WORK;
      return count;
    },
  };
  // An Ajv of its own per schema: one shared by every tenant registered each schema's `$id` for the
  // life of the process, so another organization's server could take an `$id` (its tools' schemas
  // then failed to compile) or answer a `$ref` (validating this tool against its schema). Dropped
  // with the validator, it also takes Ajv's own cache of the schema with it (about 2 KB, 1.5 ms).
  const options: Options = {
    strict: false,
    allErrors: true,
    validateSchema: false,
    code: { regExp: linearRegExp, process: (source) => counted(source) },
    // Ajv writes the whole generated code of a schema it cannot compile to console.error: 1.7 MB for a union of 3,000
    // branches, past the node's logger, on every node for every new digest (attack round 18, X-F3): refused saying why.
    logger: false,
  };
  const ajv = typeof dialect === 'string' && /2019-09|2020-12/.test(dialect) ? bounded(new Ajv2020(options)) : bounded(new Ajv(options));
  // The compiled functions reach their Ajv as `self`: the budget of the validation under way.
  Object.defineProperty(ajv, WORK, { value: work });
  let validate;
  try {
    validate = ajv.compile(schema);
  } catch (err) {
    return err instanceof RangeError ? ENDLESS : (err as Error).message.slice(0, 300);
  }
  return ((args: Record<string, unknown>, steps?: number) => {
    work.few = steps !== undefined;
    if (steps !== undefined) work.left = steps;
    else {
      const { values, reads } = valuesIn(args);
      work.left = WORK_FLOOR + WORK_PER_VALUE * values + STRING_READS * reads;
    }
    reading = work;
    try {
      return validate(args) ? [] : (validate.errors ?? []);
    } catch (err) {
      // Out of a few steps, or of a thread's stack smaller than the checking thread's: not an answer.
      if (steps !== undefined && (err === OUT_OF_WORK || err === TOO_MANY_ERRORS || err instanceof RangeError)) return undefined;
      if (err === TOO_MANY_ERRORS)
        return [{ instancePath: '', schemaPath: '#', keyword: 'errors', params: {}, message: `have more than ${MAX_ERRORS} problems` }];
      if (err === OUT_OF_WORK)
        return `checking these arguments against it takes more than ${WORK_FLOOR} + ${WORK_PER_VALUE} per value steps (its $refs multiply)`;
      if (err instanceof RangeError) return ENDLESS;
      throw err;
    } finally {
      reading = undefined;
    }
  }) as VendorValidator;
}

/** A check's outcome as a call's refusal reads it: at most 50 errors, by the API's paths, and how many more. */
export function answerOf(found: ErrorObject[] | string): { unusable: string } | { errors: FieldError[]; omitted: number } {
  if (typeof found === 'string') return { unusable: found };
  const { errors, omitted } = boundErrors(found);
  return { errors: errors.map(toFieldError), omitted };
}

/** Ajv's instance path (`/items/0/name`) as the API's (`items[0].name`). */
function toFieldError(e: ErrorObject): FieldError {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty?: string }).missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty?: string }).additionalProperty));
  const path = parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
  return { path, code: e.keyword, message: `${path || 'arguments'} ${e.message ?? 'is invalid'}` };
}

/**
 * A compiled schema function that takes one step of its validation's budget when it starts and at
 * every turn of its loops: counting calls alone let a referenced definition that walks every
 * property (`additionalProperties`) be entered a budget's worth of times, each walking all the
 * arguments (33 s for 3,000 values). Steps then bound the work itself, loops included.
 */
function counted(source: string): string {
  // An asynchronous schema answers a promise, which reads as valid whatever the arguments.
  if (/return async function/.test(source)) throw new Error('asynchronous schemas ($async) are not supported');
  const start = FUNCTION_START.exec(source);
  // Every synchronous function Ajv compiles reads so; one that does not must not run unbudgeted.
  if (!start) throw new Error('the schema compiles to code the platform cannot bound');
  const step = `if(--self.${WORK}.left<0)throw self.${WORK}.out;`;
  const end = start.index + start[0].length;
  // Ajv's loops are `for(…){` with no parenthesis inside the head, and it writes no other loop.
  if (/\bwhile\s*\(|\bdo\s*\{/.test(source)) throw new Error('the schema compiles to code the platform cannot bound');
  const body = source
    .slice(end)
    .replace(/\bfor\s*\([^)]*\)\s*\{/g, (loop) => loop + step)
    // Each branch of an `anyOf` or `oneOf` is written in place, not called: 1,000 branches applied to
    // each of 3,000 items of 30 KB of arguments held the node 9.8 s and kept 3 million errors (+1 GB)
    // in one step (attack round 18, X-F2). A subschema applied starts so, or, always valid, so.
    .replace(/\bconst _errs\d+ = errors;|\bvar _valid\d+ = true;/g, (branch) => branch + step)
    // `minProperties` and `maxProperties` list every name of the object, which a step did not count: an
    // `allOf` of 3,000 of them over 10,000 names held the node 3.1 s (attack round 18, X-F6).
    .replace(/\bObject\.keys\((data\d*)\)\.length/g, `self.${WORK}.names($1)`)
    .replace(/\berrors\+\+;/g, `errors++;if((self.${WORK}.left-=${ERROR_STEPS})<0)throw self.${WORK}.out;if(errors>${MAX_ERRORS})throw self.${WORK}.many;`);
  return `${source.slice(0, end)}${step}${body}`;
}

/** The arguments' values, and the steps reading each of their strings (and member names) once takes. */
function valuesIn(args: unknown): { values: number; reads: number } {
  let values = 0;
  let reads = 0;
  const pending: unknown[] = [args];
  while (pending.length > 0) {
    const value = pending.pop();
    values++;
    if (typeof value === 'string') reads += Math.ceil(value.length / CHARS_PER_STEP);
    if (value === null || typeof value !== 'object') continue;
    // Item by item: as one push's arguments, 120,000 items overflowed the stack (a 1 MiB body holds 500,000).
    if (Array.isArray(value)) for (const item of value) pending.push(item);
    else
      for (const [name, child] of Object.entries(value)) {
        reads += Math.ceil(name.length / CHARS_PER_STEP);
        pending.push(child);
      }
  }
  return { values, reads };
}

function bounded<T extends Ajv>(ajv: T): T {
  addFormats(ajv);
  // ajv-formats' `url` backtracks on V8 (attack round 18, X-F1); the others match in linear time.
  ajv.addFormat('url', isUrl);
  for (const [name, format] of Object.entries(ajv.formats)) {
    const test = testOf(format);
    if (test) ajv.addFormat(name, { type: 'string', validate: (text: string) => (read(text), test(text)) });
  }
  // Ajv's own, but with the string's read charged (its length is counted in code points, reading it whole).
  ajv.removeKeyword('minLength');
  ajv.removeKeyword('maxLength');
  ajv.addKeyword({
    keyword: ['maxLength', 'minLength'],
    type: 'string',
    schemaType: 'number',
    error: {
      message: ({ keyword, schemaCode }) => str`must NOT have ${keyword === 'maxLength' ? 'more' : 'fewer'} than ${schemaCode} characters`,
      params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
    },
    code(cxt: KeywordCxt) {
      const length = useFunc(cxt.gen, readLength);
      cxt.fail(_`${length}(${cxt.data}) ${cxt.keyword === 'maxLength' ? _`>` : _`<`} ${cxt.schemaCode}`);
    },
  });
  ajv.removeKeyword('const');
  ajv.removeKeyword('enum');
  for (const keyword of equalityKeywords(charge)) ajv.addKeyword(keyword);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    schemaType: 'boolean',
    type: 'array',
    errors: false,
    // Each item's canonical JSON charged a step per CANONICAL_CHARS_PER_STEP characters: an `allOf` of
    // 300 `uniqueItems` over 529 KB of items, each pass one step, held the thread 7.9 s (session 43).
    validate: (unique: boolean, data: unknown[]) => {
      if (!unique) return true;
      const seen = new Set<string>();
      for (const item of data) {
        const text = canonicalJson(item);
        if (reading && (reading.left -= 1 + Math.ceil(text.length / CANONICAL_CHARS_PER_STEP)) < 0) throw OUT_OF_WORK;
        seen.add(text);
      }
      return seen.size === data.length;
    },
  });
  return ajv;
}

/** ucs2length with the read charged; `code` names it only for standalone code, which the platform does not write. */
const readLength = Object.assign(
  (text: string): number => {
    read(text);
    return ucs2length(text);
  },
  { code: 'readLength' },
);

/** A string format's test (ajv-formats writes them as expressions, functions or `{ validate }`); none for a number's. */
function testOf(format: unknown): ((text: string) => boolean) | undefined {
  const shape = format as { type?: string; validate?: unknown };
  const validate = format instanceof RegExp || typeof format === 'function' ? format : shape.type === 'number' ? undefined : shape.validate;
  if (validate instanceof RegExp) return (text) => validate.test(text);
  return typeof validate === 'function' ? (validate as (text: string) => boolean) : undefined;
}

/** Ajv's factory for `pattern` and `patternProperties` (flags: Ajv's `u`, which RE2 always is). */
export const linearRegExp = Object.assign(
  (pattern: string, flags: string): { test: (s: string) => boolean; toString: () => string } => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern), flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (err) {
      const why = (err as Error).message.slice(0, 120);
      throw new Error(`the pattern ${JSON.stringify(pattern.slice(0, 100))} cannot be matched in linear time (${why})`, { cause: err });
    }
    // Ajv shares compiled patterns by this text: the same for every pattern would give all of them the first one.
    const size = re.programSize();
    const work = (s: string) => Math.ceil((s.length * size) / (reading?.few ? MATCH_WORK_PER_STEP : THREAD_MATCH_WORK_PER_STEP));
    const test = (s: string) => (read(s, MATCH_STEPS + work(s)), re.test(s));
    return { test, toString: () => `/${pattern}/${flags}` };
  },
  { code: 'new RegExp' },
);
