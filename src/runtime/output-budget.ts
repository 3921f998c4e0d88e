import { countTokens as countPieceTokens, decode, encode } from 'gpt-tokenizer';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/cjs/encodingParams/constants';
import type { ToolDeclaration } from '../capabilities/capability.types';
import { MAX_NUMBER_GROWTH_CHARS, mayHoldUnstorableNumber, numbersGrowth } from '../common/json-numbers';
import { jsonHasUnstorableText, withoutNulCharacters } from '../common/nul-character';

/** Past this, a result is refused rather than stored: it would not reach a model anyway. */
export const MAX_RESULT_CHARS = 16 * 1024 * 1024;

export interface BudgetedResult {
  /** What the call shows: the whole result, or, when cut, its first `maxOutputTokens` tokens as text. */
  result: unknown;
  /** `result` as JSON text, when measuring it made that text already: what is stored, not written again. */
  json?: string;
  truncated: boolean;
  /**
   * The whole result as JSON text, kept apart when the tool offloads large results. `tokens` is exact for the first
   * EXACT_COUNT_CHARS characters and extrapolated past them: an exact count of 16 MB would hold the node for a minute.
   */
  offloaded?: { json: string; tokens: number };
}

/** A result the product cannot store or show; the call fails with this code. */
/**
 * A tool's text is data, not a prompt: `<|endoftext|>` in it is eight ordinary characters, and the
 * tokenizer's default (refuse special tokens) would fail the call over a string a page happened to contain.
 */
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export class UnusableResultError extends Error {
  constructor(
    readonly code: 'invalid_result' | 'result_too_large',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Measures a tool's result in tokens of the tokenizer models use (o200k_base), and cuts it to the
 * tool's `maxOutputTokens` (0 = no limit). A structured result is measured as its JSON text, and
 * a cut one becomes that text's prefix: half an object is not an object.
 */
export function applyOutputBudget(value: unknown, declaration: Pick<ToolDeclaration, 'maxOutputTokens' | 'offloadLargeResults'>): BudgetedResult {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    throw new UnusableResultError('invalid_result', 'The tool returned a result that is not JSON.');
  }
  if (json === undefined) return { result: null, truncated: false };
  if (json.length > MAX_RESULT_CHARS) {
    throw new UnusableResultError('result_too_large', `The tool returned more than ${MAX_RESULT_CHARS} characters.`);
  }
  if (jsonHasUnstorableText(json)) {
    // U+0000 and lone surrogates cannot be stored (see nul-character.ts); a tool's text keeps everything else.
    json = JSON.stringify(withoutNulCharacters(JSON.parse(json)));
  }
  // What clients read back is the JSON form; measuring anything else would measure a different thing.
  // It is parsed back only when kept whole: a cut result is its text's prefix, an offloaded one is
  // stored as that text, and parsing 14 MB of small objects held the event loop for 150 ms.
  const whole = (): BudgetedResult => {
    storedAsJson(value, json);
    return { result: JSON.parse(json), json, truncated: false };
  };
  const max = declaration.maxOutputTokens ?? 0;
  // A result that is one string (whatever made it: a Date's JSON is one too) is measured as that string.
  const text = json.startsWith('"') ? (JSON.parse(json) as string) : json;
  // A token is at least one character, so a text no longer than the limit is within it.
  if (max <= 0 || text.length <= max) return whole();
  const measured = measure(text, max, declaration.offloadLargeResults === true);
  if (measured.kept.length <= max) return whole();
  if (declaration.offloadLargeResults) storedAsJson(value, json);
  return {
    result: decode(measured.kept.slice(0, max)),
    truncated: true,
    offloaded: declaration.offloadLargeResults ? { json, tokens: measured.tokens } : undefined,
  };
}

/**
 * Refuses a result kept as JSON (whole, or offloaded) whose numbers PostgreSQL prints with every
 * digit (`5e-324`: 326 characters), as a body's are refused (row 134): a server's 2 MB answer of
 * them was stored in 81 KB and read back as 98 MB, each read of its result 900 ms; 14 MB of them
 * made a 656 MB text no string can hold, and the read ended the node (attack round 16, S-F1).
 * Walked only when the text holds such a literal; growth only (a non-finite number is written as
 * null, as before). A cut result is text, stored as written.
 */
function storedAsJson(value: unknown, json: string): void {
  if (mayHoldUnstorableNumber(json) && numbersGrowth(value, MAX_NUMBER_GROWTH_CHARS) > MAX_NUMBER_GROWTH_CHARS) {
    throw new UnusableResultError(
      'invalid_result',
      `The tool returned numbers that would be stored more than ${MAX_NUMBER_GROWTH_CHARS} characters longer than written (a large exponent either way, such as 1e300 or 5e-324, is stored as every digit it stands for).`,
    );
  }
}

/**
 * BPE over one pre-token is quadratic in its length, and one pre-token can be a whole 16 MB run of letters:
 * no piece longer than this reaches the tokenizer. Longer than any real word or markdown rule, so
 * ordinary text is counted exactly as one call over the whole text would count it.
 */
export const MAX_PIECE_CHARS = 256;
/** Text handed to the tokenizer at once, so that measuring can stop soon after the limit. */
export const MAX_SEGMENT_CHARS = 8 * 1024;
/** Past this many characters, an offloaded result's size in tokens is extrapolated (see BudgetedResult). */
export const EXACT_COUNT_CHARS = 64 * 1024;

/** Tokenizes up to just past `max` tokens (or, with `total`, EXACT_COUNT_CHARS), never the whole of a huge text. */
function measure(text: string, max: number, total: boolean): { kept: number[]; tokens: number } {
  const kept: number[] = [];
  let tokens = 0;
  let consumed = 0;
  for (const segment of tokenizerSegments(text)) {
    const encoded = encode(segment, AS_PLAIN_TEXT);
    tokens += encoded.length;
    consumed += segment.length;
    for (let i = 0; i < encoded.length && kept.length <= max; i++) kept.push(encoded[i]);
    if (kept.length > max && (!total || consumed >= EXACT_COUNT_CHARS)) break;
  }
  if (consumed < text.length) tokens += Math.ceil(((text.length - consumed) * tokens) / consumed);
  return { kept, tokens };
}

/**
 * Tokens of `text` (o200k_base, a special token's spelling counted as text), by tokenizerSegments:
 * no piece longer than MAX_PIECE_CHARS reaches the tokenizer, so the cost is linear in the text.
 * The one way the product counts tokens (ESLint forbids gpt-tokenizer elsewhere): the tools'
 * own fitting and run compaction handed whole texts to gpt-tokenizer, and a run of 20,000 CJK
 * characters (one pre-token) took 1.4 s a count, so eight `read_document` calls held the node's
 * event loop for seconds (attack round 7). With `stopPast`, counting ends once the count passes it.
 */
export function countTokens(text: string, stopPast = Number.POSITIVE_INFINITY): number {
  let tokens = 0;
  for (const segment of tokenizerSegments(text)) {
    tokens += countPieceTokens(segment, AS_PLAIN_TEXT);
    if (tokens > stopPast) break;
  }
  return tokens;
}

/**
 * The text in consecutive slices, cut only where the tokenizer's own pre-tokenizer (o200k_base, as
 * gpt-tokenizer's default encoding) ends a piece not in whitespace, so that tokenizing them one by
 * one gives the tokens of the whole; a piece longer than MAX_PIECE_CHARS is cut into slices of that
 * length (between surrogates of a pair never), and so is text with no clean cut for 4 segments.
 */
export function* tokenizerSegments(text: string, segmentChars = MAX_SEGMENT_CHARS): Generator<string> {
  let start = 0;
  let end = 0;
  for (const match of text.matchAll(new RegExp(O200K_TOKEN_SPLIT_REGEX.source, 'gu'))) {
    const at = match.index;
    const pieceEnd = at + match[0].length;
    if (match[0].length > MAX_PIECE_CHARS) {
      if (at > start) yield text.slice(start, at);
      for (let from = at; from < pieceEnd;) {
        let to = Math.min(from + MAX_PIECE_CHARS, pieceEnd);
        if (to < pieceEnd && isHighSurrogate(text.charCodeAt(to - 1))) to++;
        yield text.slice(from, to);
        from = to;
      }
      start = end = pieceEnd;
      continue;
    }
    // After whitespace, the pre-tokenizer's `\s+(?!\S)` reads on: a cut there could move one space into the other piece.
    const clean = end > start && !WHITESPACE.test(text[end - 1]);
    if (pieceEnd - start > (clean ? segmentChars : 4 * segmentChars) && end > start) {
      yield text.slice(start, end);
      start = end;
    }
    end = pieceEnd;
  }
  if (text.length > start) yield text.slice(start);
}

const WHITESPACE = /\s/u;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
