import type { FieldError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { answerOf, compileVendorSchema, VendorValidator } from './vendor-schema';

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
  /** Compiled and kept, in `ms`. */
  | { compiled: true; ms: number }
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
    const start = performance.now();
    const compiled = compileVendorSchema(task.schema);
    validators.set(task.digest, compiled);
    return typeof compiled === 'string' ? { unusable: compiled } : { compiled: true, ms: performance.now() - start };
  }
  const validator = validators.get(task.digest);
  if (validator === undefined) return { missing: true };
  // Only what an answer carries crosses back (a union's 10,000 errors are not copied to be dropped).
  return answerOf(typeof validator === 'string' ? validator : validator(task.args));
}
