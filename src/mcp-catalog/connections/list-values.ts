/**
 * The values a tool list's schemas hold. A list is bounded in characters (MAX_LIST_CHARS), but
 * making it storable, comparing it and reading it cost per value: 4 MiB of `enum: [0, 0, …]` is two
 * million values, and each listing of it (a person's sync, and a refresh whenever its server sends
 * `list_changed`, every 30 s per connection, with no one asking) took about 1.1 s of a node's CPU,
 * where 4 MiB of descriptions took 0.17 s (attack round 21, AD-F2).
 */
export const MAX_LIST_VALUES = 200_000;

/** The JSON values in `value`, itself included (undefined: none). */
export function valuesIn(value: unknown): number {
  if (value === undefined) return 0;
  if (value === null || typeof value !== 'object') return 1;
  let count = 1;
  for (const child of Object.values(value)) count += valuesIn(child);
  return count;
}

/** How deeply `value` nests (a scalar: 0). */
export function depth(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let max = 0;
  for (const child of Object.values(value)) max = Math.max(max, depth(child));
  return max + 1;
}
