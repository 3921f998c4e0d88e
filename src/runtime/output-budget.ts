import { countTokens, decode, encodeGenerator, isWithinTokenLimit } from 'gpt-tokenizer';
import type { ToolDeclaration } from '../capabilities/capability.types';
import { jsonHasUnstorableText, withoutNulCharacters } from '../common/nul-character';

/** Past this, a result is refused rather than stored: it would not reach a model anyway. */
export const MAX_RESULT_CHARS = 16 * 1024 * 1024;

export interface BudgetedResult {
  /** What the call shows: the whole result, or, when cut, its first `maxOutputTokens` tokens as text. */
  result: unknown;
  truncated: boolean;
  /** The whole result, kept apart when the tool offloads large results. */
  offloaded?: { result: unknown; tokens: number };
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
  // What clients read back is the JSON form; measuring anything else would measure a different thing.
  let result: unknown = JSON.parse(json);
  if (jsonHasUnstorableText(json)) {
    // U+0000 and lone surrogates cannot be stored (see nul-character.ts); a tool's text keeps everything else.
    result = withoutNulCharacters(result);
    json = JSON.stringify(result);
  }
  const max = declaration.maxOutputTokens ?? 0;
  const text = typeof result === 'string' ? result : json;
  // A token is at least one character, so a text no longer than the limit is within it.
  if (max <= 0 || text.length <= max || isWithinTokenLimit(text, max, AS_PLAIN_TEXT) !== false) return { result, truncated: false };
  const kept: number[] = [];
  for (const chunk of encodeGenerator(text, AS_PLAIN_TEXT)) {
    kept.push(...chunk);
    if (kept.length >= max) break;
  }
  const cut = decode(kept.slice(0, max));
  return {
    result: cut,
    truncated: true,
    offloaded: declaration.offloadLargeResults ? { result, tokens: countTokens(text, AS_PLAIN_TEXT) } : undefined,
  };
}
