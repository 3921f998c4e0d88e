/**
 * RFC 8785 canonical JSON, byte for byte what `json-canonicalize` (the library published digests
 * were made with, and this module's test oracle) writes, at the speed of the engine's own
 * `JSON.stringify`. The library writes every value from JavaScript, a string at a time: a keyed
 * tool call's 1.7 MB of arguments held the event loop 200 ms, twice (attack round 13, K-F7). Here
 * the value is copied with each object's keys in sorted order and the engine writes the copy;
 * arrays of plain values are not copied at all. What the engine would write otherwise than the
 * library is written by `exactJson`, as the library does it, with the engine's help where it can.
 */
export function canonicalJson(value: unknown): string {
  let fit: unknown;
  try {
    fit = sortedCopy(value, new Set());
  } catch (err) {
    if (err !== UNFIT) throw err;
    return exactJson(value);
  }
  return JSON.stringify(fit);
}

const UNFIT = new Error('a value the engine would not write canonically');

/**
 * The value with every object's keys inserted in sorted order, which `JSON.stringify` keeps. Not
 * for integer-like keys (the engine puts them first, in numeric order), `toJSON`, `undefined`,
 * holes, functions, non-finite numbers or cycles: `UNFIT`, and `exactJson` writes it all. The copies
 * have no prototype, so a `__proto__` key is an own key like any other.
 */
function sortedCopy(value: unknown, open: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw UNFIT;
    return value;
  }
  if (typeof value !== 'object' || (value as { toJSON?: unknown }).toJSON != null || open.has(value)) throw UNFIT;
  if (Array.isArray(value) && allPlain(value)) return value;
  open.add(value);
  let copy: unknown;
  if (Array.isArray(value)) {
    const items = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) throw UNFIT;
      items[i] = sortedCopy(value[i], open);
    }
    copy = items;
  } else {
    const keys = Object.keys(value).sort();
    // Sorted, the keys starting with a digit come together, before any starting past '9'.
    for (const key of keys) {
      const first = key.charCodeAt(0);
      if (first >= 48 && first <= 57) throw UNFIT;
      if (first > 57) break;
    }
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const key of keys) sorted[key] = sortedCopy((value as Record<string, unknown>)[key], open);
    copy = sorted;
  }
  open.delete(value);
  return copy;
}

/**
 * What the library writes, and how it writes what JSON does not have: a value with a `toJSON` (a
 * `Date`, or a parsed object with such a key) is written by `JSON.stringify` as it is, unsorted; a
 * key whose value is `undefined` is left out and an array's `undefined` written `null` (holes left
 * out); functions and symbols are written `undefined`; a non-finite number and a cycle are refused.
 * Arrays of plain values, and objects of more than four, the engine still writes (its property
 * list fixes the order, integer-like keys included).
 */
function exactJson(value: unknown): string {
  const open = new Set<object>();
  return write(value);

  function write(value: unknown): string {
    if (typeof value === 'string') return JSON.stringify(value);
    if (typeof value === 'number') return numberText(value);
    if (value === null || typeof value !== 'object' || (value as { toJSON?: unknown }).toJSON != null) return String(JSON.stringify(value));
    if (open.has(value)) throw new Error('Circular reference detected');
    open.add(value);
    const text = Array.isArray(value) ? arrayText(value) : objectText(value as Record<string, unknown>);
    open.delete(value);
    return text;
  }

  function arrayText(array: unknown[]): string {
    if (allPlain(array)) return JSON.stringify(array);
    let text = '[';
    let first = true;
    for (let i = 0; i < array.length; i++) {
      // The library walks with forEach, which passes over holes.
      if (!(i in array)) continue;
      if (!first) text += ',';
      first = false;
      text += array[i] === undefined ? 'null' : write(array[i]);
    }
    return text + ']';
  }

  function objectText(object: Record<string, unknown>): string {
    const keys = Object.keys(object).sort();
    const values = keys.map((key) => object[key]);
    // Not for a boxed string or number, which the engine writes as the primitive.
    if (keys.length > 4 && isPlainObject(object) && allPlain(values)) return JSON.stringify(object, keys);
    let text = '{';
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      if (values[i] === undefined) continue;
      if (!first) text += ',';
      first = false;
      text += JSON.stringify(keys[i]) + ':' + write(values[i]);
    }
    return text + '}';
  }
}

/**
 * Values the engine writes exactly as the canonical form does: strings, finite numbers (ECMAScript's
 * shortest round-trip form, as RFC 8785 asks), booleans and null. Not a hole: the engine writes
 * `null` where the library writes nothing.
 */
function allPlain(values: unknown[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    const type = typeof value;
    if (type === 'string' || type === 'boolean' || value === null) continue;
    if (type === 'number' && Number.isFinite(value)) continue;
    return false;
  }
  return true;
}

function numberText(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`Non-finite number (${value}) is not permitted in JSON (RFC 8785 §3.2.2.3)`);
  return String(value);
}

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
