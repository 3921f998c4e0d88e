import type { Type } from '@nestjs/common';
import { instanceToPlain, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { FieldError } from '../common/api-error';
import { flattenValidationErrors, joinPath } from '../common/validation';

export interface ClassValidationResult<T> {
  /** An instance of the class: defaults applied where the input left a field out. */
  value: T;
  /** Its JSON form: what gets stored and hashed. */
  plain: Record<string, unknown>;
  /** Paths relative to the validated object (`units`, `nested.x`, `''` for the whole). */
  errors: FieldError[];
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
  const value = plainToInstance(cls, input, { enableImplicitConversion: false });
  const errors = flattenValidationErrors(
    validateSync(value, {
      whitelist: true,
      forbidNonWhitelisted: true,
      // Off because the value is always an instance of a known class; on, a class without fields would refuse `{}`.
      forbidUnknownValues: false,
      validationError: { target: false, value: false },
    }),
  );
  const reported = errors.map((e) => e.path);
  for (const path of nullPaths(input, '')) {
    // A null the validators already refused (at that field or inside a refused list) is reported once.
    if (!reported.some((r) => path === r || path.startsWith(`${r}.`) || path.startsWith(`${r}[`))) errors.push({ path, code: 'isNotNull', message: `${path} must not be null; leave it out to use the default` });
  }
  return { value, plain: toPlain(value), errors };
}

function nullPaths(node: unknown, at: string): string[] {
  if (node === null) return [at];
  if (typeof node !== 'object') return [];
  return Object.entries(node as Record<string, unknown>).flatMap(([key, child]) => nullPaths(child, joinPath(at, key)));
}

function toPlain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(instanceToPlain(value))) as Record<string, unknown>;
}
