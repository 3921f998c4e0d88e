import type { FieldError } from './api-error';
import { findUnstorable } from './nul-character';

/**
 * Numbers JSON can write but a double cannot hold. `JSON.parse` turns `1e309` (or 309 digits)
 * into `Infinity` without a word: a free-form object (metadata, a draft's config) then stored it
 * as `null`, a value the client never sent, and hashing it for an idempotency key or an approval
 * (RFC 8785 has no Infinity) answered 500. A body holding one is refused, naming where, before
 * anything runs. Numbers that merely lose precision (2^53 + 1, `1e-400` → 0) are JSON's own
 * rounding and stay accepted.
 *
 * A literal of d digits before its point and exponent E is below 10^(d+E), so it can overflow
 * only when d + E > 308: with an exponent of three digits or more, or, with one of at most 99,
 * 210 digits or more before the point. The parsed value is walked only when the text holds one of
 * those; a body of plain numbers, UUIDs and words costs one native scan.
 */
const MAY_OVERFLOW = /[eE]\+?0*[1-9]\d{2}|\d{210}/;

export function mayHoldNonFiniteNumber(jsonText: string): boolean {
  return MAY_OVERFLOW.test(jsonText);
}

/** The first number that is not finite (what JSON.parse made of an out-of-range literal), as a 400 `errors[]` entry, or undefined. */
export function findNonFiniteNumber(value: unknown, at = ''): FieldError | undefined {
  return findUnstorable(value, { text: false, numbers: true }, at);
}
