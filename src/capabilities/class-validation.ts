import type { Type } from '@nestjs/common';
import { validateSync } from 'class-validator';
import { MAX_REPORTED_ERRORS, type FieldError } from '../common/api-error';
import { checkShape, mergeErrors } from '../common/bounded-transform';
import { toInstance, toPlainObject } from '../common/instance-transform';
import { flattenValidationErrors, joinPath } from '../common/validation';

export interface ClassValidationResult<T> {
  /** An instance of the class: defaults applied where the input left a field out. */
  value: T;
  /** Its JSON form: what gets stored and hashed. */
  plain: Record<string, unknown>;
  /** Paths relative to the validated object (`units`, `nested.x`, `''` for the whole); at most MAX_REPORTED_ERRORS. */
  errors: FieldError[];
  /** Problems found beyond `errors` (see bounded-transform.ts). */
  omitted?: number;
}

/**
 * Validates untrusted JSON against a class-validator class, the same class that generated the
 * JSON Schema: unknown properties are refused, nothing is coerced, and absent fields keep the
 * class's initializers. `null` is refused wherever the schema does not allow it, which for our
 * generated schemas is everywhere: class-validator's @IsOptional would let it through and
 * overwrite the default.
 */
export function validateWithClass<T extends object>(cls: Type<T>, input: unknown): ClassValidationResult<T> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    const value = new cls();
    return { value, plain: toPlain(value), errors: [{ path: '', code: 'isObject', message: 'must be an object' }] };
  }
  // Unknown keys are refused in one bounded pass before anything is built (bounded-transform.ts).
  const shape = checkShape(cls, input);
  if (!shape.recoverable) {
    const value = new cls();
    return { value, plain: toPlain(value), errors: shape.errors, omitted: shape.omitted };
  }
  const value = toInstance(cls, input);
  const flat = flattenValidationErrors(
    validateSync(value, {
      whitelist: true,
      forbidNonWhitelisted: true,
      // Off because the value is always an instance of a known class; on, a class without fields would refuse `{}`.
      forbidUnknownValues: false,
      // Kept so each bad element of a list is named (common/flatten-errors.ts); never answered.
      validationError: { target: true, value: true },
    }),
  );
  const errors = mergeErrors(shape.errors, flat.errors);
  // A list whose bad elements were counted past those named holds its nulls among them.
  const reported = new Set([...errors.map((e) => e.path), ...flat.counted]);
  // A null the validators already refused (at that field or inside a refused list) is reported
  // once: a refused path is not entered. Past a refusal's worth, nulls are counted, not built.
  let omitted = flat.omitted;
  nullPaths(input, [], reported.size > 0 ? '' : undefined, reported, (path) => {
    if (errors.length >= MAX_REPORTED_ERRORS) omitted++;
    else errors.push({ path, code: 'isNotNull', message: `${path} must not be null; leave it out to use the default` });
  });
  if (errors.length === 0) return { value, plain: toPlain(value), errors };
  // Refused arguments are not stored or hashed: their plain form (a copy as large as the body,
  // 60 ms for 300,000 elements) is made only if asked for.
  let plain: Record<string, unknown> | undefined;
  return {
    value,
    get plain() {
      return (plain ??= toPlain(value));
    },
    errors,
    ...(omitted > 0 && { omitted }),
  };
}

/**
 * Calls `found` with the path of each null at or under no `refused` path. The path is kept as it
 * is walked only when there are refused paths to compare it with (`at`); otherwise it is joined
 * from `keys` for a null found: 200,000 elements of a refused list took 40 ms of paths and
 * ancestors' copies before (session 45), a valid call's arguments one string a value.
 */
function nullPaths(node: unknown, keys: (string | number)[], at: string | undefined, refused: ReadonlySet<string>, found: (path: string) => void): void {
  if (at !== undefined && refused.has(at)) return;
  if (node === null) return found(at ?? keys.reduce<string>((p, k) => (typeof k === 'number' ? `${p}[${k}]` : joinPath(p, k)), ''));
  if (typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      keys.push(i);
      nullPaths(node[i], keys, at === undefined ? undefined : `${at}[${i}]`, refused, found);
      keys.pop();
    }
    return;
  }
  for (const key of Object.keys(node)) {
    keys.push(key);
    nullPaths((node as Record<string, unknown>)[key], keys, at === undefined ? undefined : joinPath(at, key), refused, found);
    keys.pop();
  }
}

function toPlain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(toPlainObject(value))) as Record<string, unknown>;
}
