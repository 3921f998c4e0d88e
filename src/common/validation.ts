import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { findNulCharacter } from './nul-character';
import { ApiError, FieldError } from './api-error';
import { joinPath } from './field-path';

export { joinPath };

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

/**
 * Refuses a body or query that holds U+0000 anywhere (see nul-character.ts) with the path of it,
 * whatever the route, before the route's own validation.
 */
class RequestValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' || metadata.type === 'query') {
      const path = findNulCharacter(value);
      if (path !== undefined) {
        throw ApiError.invalidRequest([{ path, code: 'nul_character', message: `${path || 'the body'} holds the character U+0000, which cannot be stored` }]);
      }
    }
    return super.transform(value, metadata);
  }
}

/** Strict everywhere: unknown properties are refused, types are checked, nothing is coerced silently. */
export function createValidationPipe(): ValidationPipe {
  return new RequestValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => ApiError.invalidRequest(flattenValidationErrors(errors)),
  });
}
