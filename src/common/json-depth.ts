/**
 * The deepest JSON a request body may nest. Validation, transformation and hashing of a body all
 * recurse into it; without a bound, a few kilobytes of brackets exhaust the stack. Nothing the
 * product accepts comes near this depth.
 */
export const MAX_JSON_DEPTH = 64;

/** The nesting depth of a JSON text, counted without parsing it (strings are skipped). */
export function jsonDepthExceeds(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether a JSON text holds more than `max` object members (a `:` outside strings), counted
 * without parsing it. `JSON.parse` of many distinct member names is 15 to 20 times slower than of
 * the same bytes in repeated ones, and holds the event loop whole: a 4 MiB line of 358,000 names
 * took a second (attack round 15, R-F5).
 */
export function jsonMembersExceed(text: string, max: number): boolean {
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x3a /* : */ && ++members > max) {
      return true;
    }
  }
  return false;
}
