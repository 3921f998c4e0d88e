import { countTokens } from '../../runtime/output-budget';

/**
 * Helpers for tools that keep their own results within their declared `maxOutputTokens`. The
 * executor cuts an oversized result as a last resort, and a cut result is a prefix of JSON text:
 * the model loses the end of the answer, including whatever told it how to get the rest. A tool
 * that fits itself drops whole items or pages and says so, which the model can act on.
 */

/** A result's size as the executor measures it: tokens (o200k_base) of its JSON text, or of the string itself. */
export function resultTokens(value: unknown): number {
  return countTokens(typeof value === 'string' ? value : JSON.stringify(value));
}

/**
 * Whether a result is within `maxTokens` as `resultTokens` measures it. A token is at least one
 * character, so a text no longer than the limit fits without being tokenized (most results, on
 * every call); a longer one is tokenized only until it passes the limit.
 */
export function fitsIn(value: unknown, maxTokens: number): boolean {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length <= maxTokens || countTokens(text, maxTokens) <= maxTokens;
}

/**
 * The largest `n` in `0..max` for which `fits(n)` holds, when `fits` holds up to some point and
 * not after it, and `fits(0)` holds. Tries `max` first: most results fit whole, and measuring
 * costs a tokenization.
 */
export function largestFitting(max: number, fits: (n: number) => boolean): number {
  if (fits(max)) return max;
  let low = 0;
  let high = max - 1;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(mid)) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * Keeps the longest prefix of `items` whose result, made by `make(kept, omitted)`, fits in
 * `maxTokens`. `make` should tell the model that `omitted` items were left out.
 */
export function fitList<T, R>(items: readonly T[], maxTokens: number, make: (kept: T[], omitted: number) => R): R {
  const n = largestFitting(items.length, (k) => fitsIn(make(items.slice(0, k), items.length - k), maxTokens));
  return make(items.slice(0, n), items.length - n);
}

/** `1 document`, `3 documents`: messages the model reads should read right. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
