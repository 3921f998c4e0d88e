import type { FieldError } from './api-error';
import { joinPath } from './field-path';
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

/**
 * How many characters more than JSON.stringify writes them a body's numbers may take once
 * PostgreSQL prints them. `jsonb` keeps a number as a decimal with every digit: `5e-324` is read
 * back as `0.000…005`, 326 characters, and `1e308` as 309 digits. A 1 MiB document whose metadata
 * held 150,000 of them was stored in 40 KB and read back as 49 MB of JSON: each read of it 2 to 4 s,
 * and one viewer key's four reads at once took another organization's reads from p50 8 ms to
 * 545 ms, the node +300 MB (attack round 14, N-F3). A body's numbers may grow by as much as a
 * whole body, no more: what is stored of it is read back in at most about twice its size.
 */
export const MAX_NUMBER_GROWTH_CHARS = 1024 * 1024;

/**
 * A number literal (after `:`, `,` or `[`) with an exponent of 10 or more either way: the only
 * literals PostgreSQL prints much longer than they were written. Ids and words (`…1e12…` in a UUID)
 * cost no walk.
 */
const MAY_GROW = /[:,[]\s*-?\d+(?:\.\d+)?[eE][+-]?0*[1-9]\d/;

export function mayHoldUnstorableNumber(jsonText: string): boolean {
  return MAY_OVERFLOW.test(jsonText) || MAY_GROW.test(jsonText);
}

/** A number past a double's range, or the number at which the body's numbers pass MAX_NUMBER_GROWTH_CHARS, as a 400 `errors[]` entry. */
export function findUnstorableNumber(value: unknown, at = ''): FieldError | undefined {
  const nonFinite = findNonFiniteNumber(value, at);
  if (nonFinite) return nonFinite;
  const trail: string[] = [];
  let growth = 0;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'number') return (growth += printedGrowth(v)) > MAX_NUMBER_GROWTH_CHARS;
    if (v === null || typeof v !== 'object') return false;
    for (const key of Object.keys(v)) {
      trail.push(key);
      if (walk((v as Record<string, unknown>)[key])) return true;
      trail.pop();
    }
    return false;
  };
  if (!walk(value)) return undefined;
  const path = trail.reduce((p, key) => joinPath(p, key), at);
  return {
    path,
    code: 'numbers_too_long',
    message: `${path || 'the body'} and the numbers before it would take more than ${MAX_NUMBER_GROWTH_CHARS} characters more than written once stored with all their digits (a large exponent either way, such as 1e300 or 5e-324, is stored as every digit it stands for)`,
  };
}

/** How many characters longer PostgreSQL prints `n` (a decimal with every digit) than JSON.stringify does. */
export function printedGrowth(n: number): number {
  const written = String(n);
  const e = written.indexOf('e');
  if (e < 0) return 0;
  const sign = n < 0 ? 1 : 0;
  const digits = written.slice(sign, e).replace('.', '').length;
  const exponent = Number(written.slice(e + 1));
  const printed = exponent >= 0 ? sign + exponent + 1 + (digits - 1 > exponent ? 1 + digits - 1 - exponent : 0) : sign + 2 + (-exponent - 1) + digits;
  return Math.max(0, printed - written.length);
}

/** How many characters longer than JSON.stringify writes them PostgreSQL prints all of `value`'s numbers (printedGrowth), counted no further than just past `stopPast`. */
export function numbersGrowth(value: unknown, stopPast = Number.POSITIVE_INFINITY): number {
  let growth = 0;
  const walk = (v: unknown): void => {
    if (growth > stopPast) return;
    if (typeof v === 'number') growth += printedGrowth(v);
    else if (v !== null && typeof v === 'object') for (const key of Object.keys(v)) walk((v as Record<string, unknown>)[key]);
  };
  walk(value);
  return growth;
}
