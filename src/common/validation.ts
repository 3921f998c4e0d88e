import { ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiError, FieldError } from './api-error';

/** Joins a property path the way clients read it: `capabilities[0].config.units`. */
export function joinPath(parent: string, property: string): string {
  if (/^\d+$/.test(property)) return `${parent}[${property}]`;
  return parent ? `${parent}.${property}` : property;
}

/** Flattens class-validator's tree into one entry per problem, each naming its field. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const path = joinPath(parent, error.property);
    for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
      const unknown = constraint === 'whitelistValidation';
      out.push({
        path,
        code: unknown ? 'unknown_property' : constraint,
        message: unknown ? `property ${error.property} is not allowed` : message,
      });
    }
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, path));
  }
  return out;
}

/** Strict everywhere: unknown properties are refused, types are checked, nothing is coerced silently. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => ApiError.invalidRequest(flattenValidationErrors(errors)),
  });
}
