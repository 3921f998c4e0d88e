import { countTokens, MAX_PIECE_CHARS, tokenizerSegments } from '../../runtime/output-budget';

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
 * The most of `chars` (a text's code points) that `make(n)`, a result holding the first `n` of them
 * in a JSON string, may hold within `maxTokens`, when `make(0)` fits. The text is counted once, as
 * JSON writes it, segment after segment until the room the rest of the result leaves is spent; the
 * result so made is then measured whole, as the executor will, and made a tenth shorter while the
 * joins' few tokens still pass (a binary search after three). largestFitting counted the page about
 * fourteen times, each up to the limit: a `read_document` page of 12,000 control characters handed
 * the tokenizer 120,000 characters and held the event loop 8.9 ms, now 24,000 and 3.1 ms (attack
 * round 21, AC-F2).
 */
export function longestFittingText<R>(chars: readonly string[], make: (n: number) => R, maxTokens: number): number {
  if (fitsIn(make(chars.length), maxTokens)) return chars.length;
  const room = maxTokens - resultTokens(make(0));
  const escaped = chars.map((c) => JSON.stringify(c).slice(1, -1));
  let used = 0;
  let spent = 0;
  // Segments of about a piece (256 characters), so the room is spent to within a few tokens.
  for (const segment of tokenizerSegments(escaped.join(''), MAX_PIECE_CHARS)) {
    used += countTokens(segment);
    if (used > room) break;
    spent += segment.length;
  }
  let n = 0;
  for (let length = 0; n < chars.length && length + escaped[n].length <= spent; n++) length += escaped[n].length;
  // A first segment past the room (a long title beside a text of escapes): the few characters that fit, searched.
  if (n === 0) return largestFitting(Math.min(chars.length, 4 * MAX_PIECE_CHARS), (k) => fitsIn(make(k), maxTokens));
  for (let shorter = 0; shorter < 3; shorter++) {
    if (n === 0 || fitsIn(make(n), maxTokens)) return n;
    n = Math.floor(n * 0.9);
  }
  return largestFitting(n, (k) => fitsIn(make(k), maxTokens));
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
