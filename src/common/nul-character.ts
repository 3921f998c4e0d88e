import type { FieldError } from './api-error';
import { joinPath } from './field-path';

/**
 * Text PostgreSQL cannot store. U+0000 is refused by `text` and `jsonb` alike: the INSERT that
 * carries it fails. A lone UTF-16 surrogate (`"\ud800"` is valid JSON) cannot be encoded in UTF-8:
 * `jsonb` refuses it (a 500, after a read-only tool had already run), and a `text` column silently
 * stores U+FFFD instead (data changed without a word). So a request holding either is refused
 * (400, naming where) before anything runs or is written, and what a tool returns has them replaced.
 */
export const NUL = '\u0000';

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function unstorable(text: string): 'nul_character' | 'lone_surrogate' | undefined {
  if (text.includes(NUL)) return 'nul_character';
  // isWellFormed is one native scan; the regular expression only runs to say which problem it is.
  if (!text.isWellFormed()) return 'lone_surrogate';
  return undefined;
}

/** How a key with such a character is shown in a path: escaped, so the answer itself is storable. */
function printable(key: string): string {
  return key.replaceAll(NUL, '\\u0000').replace(new RegExp(LONE_SURROGATE.source, 'g'), (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

type Unstorable = 'nul_character' | 'lone_surrogate' | 'number_out_of_range';

/** The first string (or object key) PostgreSQL cannot store, as a 400 `errors[]` entry, or undefined. */
export function findUnstorableText(value: unknown, at = ''): FieldError | undefined {
  return findUnstorable(value, { text: true, numbers: false }, at);
}

/**
 * The first string, key or number no column can hold, in one pass: text as above, and a number
 * past a double's range (what JSON.parse made of `1e309`: see json-numbers.ts). For values that
 * did not come through the body parser, which looks for each only when its text hints at it.
 */
export function findUnstorableValue(value: unknown, at = ''): FieldError | undefined {
  return findUnstorable(value, { text: true, numbers: true }, at);
}

export function findUnstorable(value: unknown, look: { text: boolean; numbers: boolean }, at = ''): FieldError | undefined {
  // The path is built only for what is found: a body of 70,000 keys costs one scan, not 70,000 paths.
  const trail: (string | number)[] = [];
  const found = scan(value, trail, look);
  if (!found) return undefined;
  const path = trail.reduce<string>(
    (p, key, i) => (typeof key === 'number' ? `${p}[${key}]` : joinPath(p, i === trail.length - 1 && found.inKey ? printable(key) : key)),
    at,
  );
  return problem(path, found.code);
}

function scan(value: unknown, trail: (string | number)[], look: { text: boolean; numbers: boolean }): { code: Unstorable; inKey: boolean } | undefined {
  if (typeof value === 'string') {
    const code = look.text ? unstorable(value) : undefined;
    return code ? { code, inKey: false } : undefined;
  }
  if (typeof value === 'number') return look.numbers && !Number.isFinite(value) ? { code: 'number_out_of_range', inKey: false } : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  // A list by its indexes: Object.keys made a string of each (200,000 for a list of that many).
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      trail.push(i);
      const found = scan(value[i], trail, look);
      if (found) return found;
      trail.pop();
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    trail.push(key);
    const keyCode = look.text ? unstorable(key) : undefined;
    if (keyCode) return { code: keyCode, inKey: true };
    const found = scan((value as Record<string, unknown>)[key], trail, look);
    if (found) return found;
    trail.pop();
  }
  return undefined;
}

function problem(path: string, code: Unstorable): FieldError {
  const where = path || 'the body';
  if (code === 'number_out_of_range') return { path, code, message: `${where} is a number beyond what a 64-bit float holds (about ±1.8e308)` };
  return code === 'nul_character'
    ? { path, code, message: `${where} holds the character U+0000, which cannot be stored` }
    : { path, code, message: `${where} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape), which is not text and cannot be stored` };
}

/** The path of the first string (or object key) that holds U+0000, or undefined. Keys show it as `\u0000`. */
export function findNulCharacter(value: unknown, at = ''): string | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? at : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    const path = joinPath(at, key.replaceAll(NUL, '\\u0000'));
    if (key.includes(NUL)) return path;
    const found = findNulCharacter(child, path);
    if (found !== undefined) return found;
  }
  return undefined;
}

function storableString(text: string): string {
  const withoutNul = text.includes(NUL) ? text.replaceAll(NUL, '\uFFFD') : text;
  return withoutNul.isWellFormed() ? withoutNul : withoutNul.toWellFormed();
}

/** The same JSON value with every U+0000 and lone surrogate, in strings and keys, replaced by U+FFFD. */
export function withoutNulCharacters<T>(value: T): T {
  if (typeof value === 'string') return storableString(value) as T;
  if (Array.isArray(value)) return value.map(withoutNulCharacters) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableString(k), withoutNulCharacters(v)])) as T;
}

/**
 * At most `max` UTF-16 units of a text from elsewhere, made storable as above. The cut is made first
 * and between two characters: cleaning first and cutting after left half of an emoji at the end, a
 * lone surrogate again, which jsonb refuses (a 500 on a vendor's 10,000-character description).
 */
export function storablePrefix(text: string, max: number): string {
  if (text.length <= max) return storableString(text);
  const high = text.charCodeAt(max - 1);
  const low = text.charCodeAt(max);
  const cutInPair = high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
  return storableString(text.slice(0, cutInPair ? max - 1 : max));
}

/** Whether a JSON text (as JSON.stringify writes it) holds anything withoutNulCharacters would change. */
export function jsonHasUnstorableText(json: string): boolean {
  // JSON.stringify escapes exactly the lone surrogates (ES2019), and U+0000 as \u0000.
  return json.includes('\\u0000') || /\\ud[89a-f][0-9a-f]{2}/i.test(json);
}
