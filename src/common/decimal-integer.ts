/**
 * A query's integer, as `@Transform(decimalInteger)` before `@IsInt()`: decimal digits only.
 * `@Type(() => Number)` read it with Number(), which also takes `0x2`, `0b11`, `0o3`, `2e0`, `+2`
 * and ` 2 `; API.md's integers are decimal, so any other spelling is left as text for `@IsInt()` to
 * refuse, naming the parameter.
 */
export function decimalInteger({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
}
