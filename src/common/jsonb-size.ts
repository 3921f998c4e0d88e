/**
 * At least how many bytes PostgreSQL's `jsonb` takes for a value, as `pg_column_size` measures it
 * before compression: an upper bound, never below, so that a check "would the database count this"
 * refuses whatever it would count. JSON text is not that measure: a number takes 12 or more bytes
 * whatever its text (`0` is one character), an empty array or object 8 to 11 (attack round 18,
 * W-N1: 1,019 zeros, 2,047 characters of text, stored in 12,262 bytes).
 *
 * The layout (src/backend/utils/adt/jsonb_util.c): a container is a 4-byte header and a 4-byte
 * entry for each element (and each key of an object), then the values; strings are their UTF-8
 * bytes; numbers and nested containers are aligned to 4 bytes first; a number is a `numeric`
 * (a 4-byte length, 2 to 4 bytes of header, 2 bytes for each 4 decimal digits, counted here
 * generously). The whole value has a 4-byte length of its own.
 */
export function jsonbSizeOver(value: unknown, limit: number): boolean {
  let size = 8;
  // Depth-first with an explicit stack: a value may be nested as deep as the body allowed.
  const stack: unknown[] = [value];
  let root = true;
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      if (!root) size += ENTRY + PAD + 4;
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else if (v !== null && typeof v === 'object') {
      if (!root) size += ENTRY + PAD + 4;
      for (const [k, child] of Object.entries(v)) {
        size += ENTRY + Buffer.byteLength(k, 'utf8');
        stack.push(child);
      }
    } else if (typeof v === 'string') {
      size += ENTRY + Buffer.byteLength(v, 'utf8');
    } else if (typeof v === 'number') {
      size += ENTRY + PAD + numericBytes(v);
    } else {
      // true, false, null: the entry alone (a scalar at the root is kept in a one-element array).
      size += root ? ENTRY + 4 : ENTRY;
    }
    root = false;
    if (size > limit) return true;
  }
  return false;
}

const ENTRY = 4;
const PAD = 3;

/** A `numeric`'s bytes for a JavaScript number: length, header and weight, and its significant digits in groups of four (a group more for the decimal point). */
function numericBytes(n: number): number {
  const mantissa = String(Math.abs(n)).split('e')[0].replace('.', '').replace(/^0+/, '');
  return 4 + 4 + 2 * (Math.ceil(mantissa.length / 4) + 1);
}
