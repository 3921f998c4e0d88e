import type { Type } from '@nestjs/common';
import { validateSync } from 'class-validator';
import type { FieldError } from '../common/api-error';
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
  // once: each null's ancestors are looked up, so this stays linear in the size of the input.
  nullPaths(input, '', [], (path, ancestors) => {
    if (!reported.has(path) && !ancestors.some((a) => reported.has(a)))
      errors.push({ path, code: 'isNotNull', message: `${path} must not be null; leave it out to use the default` });
  });
  return { value, plain: toPlain(value), errors, ...(flat.omitted > 0 && { omitted: flat.omitted }) };
}

function nullPaths(node: unknown, at: string, ancestors: string[], found: (path: string, ancestors: string[]) => void): void {
  if (node === null) return found(at, ancestors);
  if (typeof node !== 'object') return;
  const within = [...ancestors, at];
  for (const key of Object.keys(node as object)) nullPaths((node as Record<string, unknown>)[key], joinPath(at, key), within, found);
}

function toPlain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(toPlainObject(value))) as Record<string, unknown>;
}
