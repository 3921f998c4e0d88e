import { ArgumentMetadata, Type, ValidationPipe } from '@nestjs/common';
import { validateSync, ValidatorOptions } from 'class-validator';
import { findUnstorableText } from './nul-character';
import { LruCache } from './lru-cache';
import { ApiError, type FieldError } from './api-error';
import { checkShape, declaredProperties, mergeErrors } from './bounded-transform';
import { toInstance } from './instance-transform';
import { joinPath } from './field-path';
import { flattenValidationErrors } from './flatten-errors';

export { flattenValidationErrors, joinPath };

const VALIDATOR_OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  validationError: { target: false, value: false },
};

/** The erring object and value kept on each error, so each bad element of a list can be named (flatten-errors.ts); never answered. */
const WITH_VALUES: ValidatorOptions = { ...VALIDATOR_OPTIONS, validationError: { target: true, value: true } };

/**
 * Every body and query, whatever the route, before the route's own code:
 * - text PostgreSQL cannot store (U+0000, a lone UTF-16 surrogate) is refused with its path (in a
 *   query here; in a body where it is parsed, see app.factory.ts);
 * - a class-typed argument is built and validated through bounded-transform.ts, not through
 *   ValidationPipe's own flow, which deletes `__proto__`, `constructor` and `prototype` keys from
 *   the whole value (data lost from free-form objects) and lets class-transformer skip keys named
 *   like prototype members (refusals lost at the class level).
 * Primitive arguments (`@Query('x') x: string`) keep ValidationPipe's behaviour.
 */
class RequestValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype as Type<object> | undefined;
    const isClass = metatype !== undefined && declaredProperties(metatype).size > 0;
    if (metadata.type === 'query' && isClass) return validQuery(metatype, value);
    // Bodies are checked where they are parsed (app.factory.ts), at the cost of one scan of the text.
    if (metadata.type === 'query') {
      const found = findUnstorableText(value);
      if (found) throw ApiError.invalidRequest([found]);
    }
    if (isClass && metadata.type === 'body') return validateRequest(metatype, value);
    return super.transform(value, metadata);
  }
}

/** Queries kept per request class, and the longest query (as JSON) kept. */
export const VALID_QUERIES_PER_CLASS = 256;
const VALID_QUERY_MAX_CHARS = 512;
const validQueries = new WeakMap<Type<object>, LruCache<string, object>>();

/**
 * A query validated as a class, once per distinct query: validation is a function of the class
 * and the query alone, and clients page through lists sending the same few queries again and
 * again (`?limit=50`, a filter): class-validator took more of such a request than the rest of it
 * (docs/benchmarks.md). Each request gets its own copy of the instance. Only valid queries of
 * plain values are kept, a bounded number per class, each at most a few hundred characters.
 * Synchronous, so a hot route may call it itself (the catalog does) instead of through `@Query()`.
 */
export function validQuery<T extends object>(cls: Type<T>, value: unknown): T;
export function validQuery(cls: Type<object>, value: unknown): object {
  const key = queryKey(value);
  const kept = key === undefined ? undefined : validQueries.get(cls)?.get(key);
  if (kept) return copyOf(kept);
  const found = findUnstorableText(value);
  if (found) throw ApiError.invalidRequest([found]);
  const instance = validateRequest(cls, value);
  if (key !== undefined && Object.values(instance).every(isPlainValue) && !Object.prototype.hasOwnProperty.call(instance, '__proto__')) {
    let queries = validQueries.get(cls);
    if (!queries) validQueries.set(cls, (queries = new LruCache(VALID_QUERIES_PER_CLASS)));
    queries.set(key, copyOf(instance));
  }
  return instance;
}

function queryKey(value: unknown): string | undefined {
  if (value === undefined || value === null) return '{}';
  if (typeof value !== 'object' || Array.isArray(value)) return undefined;
  const key = JSON.stringify(value);
  return key.length <= VALID_QUERY_MAX_CHARS ? key : undefined;
}

function isPlainValue(v: unknown): boolean {
  return v === null || (typeof v !== 'object' && typeof v !== 'function');
}

/** Own enumerable properties, assigned: only instances without a `__proto__` key are kept. */
function copyOf<T extends object>(instance: T): T {
  return Object.assign(Object.create(Object.getPrototypeOf(instance) as object | null) as T, instance);
}

function validateRequest(cls: Type<object>, value: unknown): object {
  // No body (or `null`) reads as `{}`, as ValidationPipe has it: a route whose fields are all optional accepts it.
  if (value === undefined || value === null) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw ApiError.invalidRequest([{ path: '', code: 'isObject', message: 'the body must be a JSON object' }]);
  }
  // A list's first page asks with no parameters at all, and for a class the answer to `{}` never
  // changes: validate it once, then only build the instance (its defaults) for each request.
  const empty = Object.keys(value as object).length === 0;
  if (empty && emptyValidates.has(cls)) return toInstance(cls, value);
  const shape = checkShape(cls, value);
  if (shape.errors.length > 0 && !shape.recoverable)
    throw new ApiError('invalid_request', 'The request is invalid.', shape.errors, { errorsOmitted: shape.omitted });
  const instance = toInstance(cls, value);
  const flat = flattenValidationErrors(validateSync(instance, WITH_VALUES));
  const errors = mergeErrors(shape.errors, flat.errors);
  if (errors.length > 0) throw invalidRequest(errors, flat.omitted);
  if (empty) emptyValidates.add(cls);
  return instance;
}

/** `omitted`: problems found past those built (flatten-errors.ts), counted in `errorsOmitted`. */
function invalidRequest(errors: FieldError[], omitted: number): ApiError {
  return new ApiError('invalid_request', 'The request is invalid.', errors, omitted > 0 ? { errorsOmitted: omitted } : undefined);
}

/** The request classes for which `{}` is known to be valid. */
const emptyValidates = new WeakSet<Type<object>>();

/** Strict everywhere: unknown properties are refused, types are checked, nothing is coerced silently. */
export function createValidationPipe(): ValidationPipe {
  return new RequestValidationPipe({
    ...VALIDATOR_OPTIONS,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    exceptionFactory: (errors) => {
      const flat = flattenValidationErrors(errors);
      return invalidRequest(flat.errors, flat.omitted);
    },
  });
}
