import type { ErrorObject } from 'ajv';
import { boundErrors } from '../common/api-error';
import type { FieldError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { compileVendorSchema, VendorValidator } from './vendor-schema';

/** Compiled argument validators kept per worker thread, by tool digest (a changed schema is a new digest). */
export const VALIDATORS_CACHED = 2000;

/**
 * What the thread is asked: to check a call's arguments against the schema it compiled for the
 * digest, or to compile a schema (sent only when the thread lacks its digest: it may be megabytes).
 */
export type VendorCheck = { digest: string; args: Record<string, unknown> } | { digest: string; schema: Record<string, unknown> };

export type VendorCheckAnswer =
  /** The thread has not compiled this digest (or no longer has it): send the schema. */
  | { missing: true }
  /** Compiled and kept. */
  | { compiled: true }
  /** Why the schema cannot be used to check these arguments (the call is refused). */
  | { unusable: string }
  | { errors: FieldError[]; omitted: number };

const validators = new LruCache<string, VendorValidator | string>(VALIDATORS_CACHED);

/**
 * Runs on a worker thread of `VendorSchemaChecks` (piscina), never on the thread that serves
 * requests: compiling a vendor's schema and checking arguments against it cost what the vendor
 * wrote, and that is for the thread to spend, within its limits of time and memory.
 */
export default function check(task: VendorCheck): VendorCheckAnswer {
  if ('schema' in task) {
    const compiled = compileVendorSchema(task.schema);
    validators.set(task.digest, compiled);
    return typeof compiled === 'string' ? { unusable: compiled } : { compiled: true };
  }
  const validator = validators.get(task.digest);
  if (validator === undefined) return { missing: true };
  const found = typeof validator === 'string' ? validator : validator(task.args);
  if (typeof found === 'string') return { unusable: found };
  // Only what an answer carries crosses back (a union's 10,000 errors are not copied to be dropped).
  const { errors, omitted } = boundErrors(found);
  return { errors: errors.map(toFieldError), omitted };
}

/** Ajv's instance path (`/items/0/name`) as the API's (`items[0].name`). */
function toFieldError(e: ErrorObject): FieldError {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty?: string }).missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty?: string }).additionalProperty));
  const path = parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
  return { path, code: e.keyword, message: `${path || 'arguments'} ${e.message ?? 'is invalid'}` };
}
