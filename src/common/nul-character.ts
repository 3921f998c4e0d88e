import { joinPath } from './field-path';

/**
 * PostgreSQL cannot store U+0000 in `text` or `jsonb`: a string holding one fails the INSERT that
 * carries it. So a request is refused with it (400, naming where it is) before anything is written,
 * and what a tool returns has it replaced.
 */
export const NUL = '\u0000';

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

/** The same JSON value with every U+0000, in strings and keys, replaced by U+FFFD. */
export function withoutNulCharacters<T>(value: T): T {
  if (typeof value === 'string') return (value.includes(NUL) ? value.replaceAll(NUL, '\uFFFD') : value) as T;
  if (Array.isArray(value)) return value.map(withoutNulCharacters) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll(NUL, '\uFFFD'), withoutNulCharacters(v)])) as T;
}
