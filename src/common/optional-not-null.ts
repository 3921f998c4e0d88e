import { ValidateIf } from 'class-validator';

/**
 * Optional, but not nullable: `null` is a value of the wrong type for a field typed as an object,
 * an array or a string, so it is validated, and refused, like any other. `@IsOptional()` would let
 * it through, to be stored as if the field were left out (or read as "absent" by one route and as
 * a wrong value by the next).
 */
export function OptionalNotNull(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}
