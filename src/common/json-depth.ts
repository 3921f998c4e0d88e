import { ApiError } from './api-error';
import type { MessageRefusal } from './json-shape';

/**
 * The deepest JSON a request body may nest. Validation, transformation and hashing of a body all
 * recurse into it; without a bound, a few kilobytes of brackets exhaust the stack. Nothing the
 * product accepts comes near this depth.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The most distinct member names (object keys) a request body, or a model's tool arguments, may
 * hold. JSON.parse makes a hidden class for each name an object gets in a new order: a 1 MiB body
 * of objects of ten new names each (about 100,000 names) held the event loop 275 to 487 ms, of a
 * hundred each 293 ms to 1.1 s, before anything looked at who sent it (src/common/json-shape.ts).
 * At this bound a body's names cost its parse about 30 ms at most.
 */
export const MAX_JSON_KEYS = 10_000;

/** The 400 of a body refused unparsed for its shape (src/common/json-shape.ts). */
export function bodyShapeRefusal(refused: MessageRefusal): Error {
  if (refused === 'depth') return Object.assign(new Error(`The request body nests deeper than ${MAX_JSON_DEPTH} levels.`), { statusCode: 400 });
  const message = `names more than ${MAX_JSON_KEYS} distinct members (object keys)`;
  return ApiError.invalidRequest([{ path: '', code: 'too_many_keys', message: `the body ${message}` }], `The request body ${message}.`);
}
