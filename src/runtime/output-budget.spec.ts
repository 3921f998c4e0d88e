import { countTokens, encode } from 'gpt-tokenizer';
import {
  applyOutputBudget,
  EXACT_COUNT_CHARS,
  MAX_PIECE_CHARS,
  MAX_RESULT_CHARS,
  MAX_SEGMENT_CHARS,
  tokenizerSegments,
  UnusableResultError,
} from './output-budget';

/**
 * BPE is quadratic in the length of one pre-token: every tokenizer entry point refuses a text longer
 * than the budget ever hands it, so a regression fails here at once instead of holding the test for hours.
 */
const BOUND = 4 * MAX_SEGMENT_CHARS;
const handed: number[] = [];
jest.mock('gpt-tokenizer', () => {
  const actual = jest.requireActual<Record<string, (text: string, ...rest: unknown[]) => unknown>>('gpt-tokenizer');
  const guarded =
    (name: string) =>
    (text: string, ...rest: unknown[]) => {
      if (typeof text === 'string') {
        if (text.length > BOUND) throw new Error(`${name} was handed ${text.length} characters at once`);
        handed.push(text.length);
      }
      return actual[name](text, ...rest);
    };
  const names = ['encode', 'encodeGenerator', 'countTokens', 'isWithinTokenLimit'];
  return { ...actual, ...Object.fromEntries(names.map((name) => [name, guarded(name)])) };
});

/** Letters without a space, different each time (the tokenizer caches a piece it has seen). */
function randomLetters(length: number, seed: number): string {
  const bytes = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    bytes[i] = 97 + (x % 26);
  }
  return Buffer.from(bytes).toString('latin1');
}

describe('applyOutputBudget', () => {
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, title: `Document ${i}`, body: 'lorem ipsum dolor sit amet '.repeat(3) }));

  it('keeps a result within the limit whole, in its JSON form', () => {
    const out = applyOutputBudget({ at: new Date('2030-01-01T00:00:00Z'), n: 1, skip: undefined }, { maxOutputTokens: 100 });
    expect(out).toEqual({ result: { at: '2030-01-01T00:00:00.000Z', n: 1 }, json: '{"at":"2030-01-01T00:00:00.000Z","n":1}', truncated: false });
  });

  it('never cuts without a limit', () => {
    expect(applyOutputBudget(rows, { maxOutputTokens: 0 })).toEqual({ result: rows, json: JSON.stringify(rows), truncated: false });
    expect(applyOutputBudget(rows, {})).toEqual({ result: rows, json: JSON.stringify(rows), truncated: false });
  });

  it('cuts a structured result to exactly maxOutputTokens tokens of its JSON text', () => {
    const out = applyOutputBudget(rows, { maxOutputTokens: 50 });
    expect(out.truncated).toBe(true);
    expect(typeof out.result).toBe('string');
    expect(JSON.stringify(rows).startsWith(out.result as string)).toBe(true);
    expect(countTokens(out.result as string)).toBeLessThanOrEqual(50);
    expect(countTokens(out.result as string)).toBeGreaterThanOrEqual(45);
    expect(out.offloaded).toBeUndefined();
  });

  it('measures a string result as the text itself', () => {
    const text = 'word '.repeat(30);
    expect(applyOutputBudget(text, { maxOutputTokens: countTokens(text) })).toEqual({ result: text, json: JSON.stringify(text), truncated: false });
    const cut = applyOutputBudget(text, { maxOutputTokens: 5 });
    expect(cut.truncated).toBe(true);
    expect(text.startsWith(cut.result as string)).toBe(true);
  });

  it('keeps the whole result apart when the tool offloads', () => {
    const out = applyOutputBudget(rows, { maxOutputTokens: 20, offloadLargeResults: true });
    expect(out.truncated).toBe(true);
    // Stored as the text that was measured: the same JSON, not written again.
    expect(out.offloaded).toEqual({ json: JSON.stringify(rows), tokens: countTokens(JSON.stringify(rows)) });
  });

  it('replaces U+0000, which cannot be stored, in strings and keys, kept or offloaded', () => {
    expect(applyOutputBudget({ 'k\u0000': ['a\u0000b'] }, {})).toEqual({
      result: { 'k\uFFFD': ['a\uFFFDb'] },
      json: '{"k\uFFFD":["a\uFFFDb"]}',
      truncated: false,
    });
    const cut = applyOutputBudget({ rows: 'row\u0000 '.repeat(200) }, { maxOutputTokens: 40, offloadLargeResults: true });
    expect(cut.truncated).toBe(true);
    expect(cut.result).toContain('row\uFFFD');
    expect(cut.result).not.toContain('\\u0000');
    expect(JSON.parse(cut.offloaded!.json)).toEqual({ rows: 'row\uFFFD '.repeat(200) });
    // The text `\u0000` (a backslash, then u0000) is not the character: it is kept.
    expect(applyOutputBudget('C:\\u0000', {})).toMatchObject({ result: 'C:\\u0000', truncated: false });
  });

  it('turns undefined into null and refuses what is not JSON or too large', () => {
    expect(applyOutputBudget(undefined, {})).toEqual({ result: null, truncated: false });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => applyOutputBudget(circular, {})).toThrow(UnusableResultError);
    expect(() => applyOutputBudget({ n: 1n }, {})).toThrow(expect.objectContaining({ code: 'invalid_result' }));
    expect(() => applyOutputBudget('x'.repeat(MAX_RESULT_CHARS + 1), {})).toThrow(expect.objectContaining({ code: 'result_too_large' }));
  });
  it('refuses numbers PostgreSQL would print far longer than written in a result kept whole or offloaded, and keeps a few (attack round 16, S-F1)', () => {
    // 3,300 × 5e-324 print 1.07 MB longer than written.
    const many = { values: new Array<number>(3_300).fill(5e-324) };
    for (const declaration of [{}, { maxOutputTokens: 100_000 }, { maxOutputTokens: 10, offloadLargeResults: true }]) {
      expect(() => applyOutputBudget(many, declaration)).toThrow(expect.objectContaining({ code: 'invalid_result' }));
    }
    // Cut and not kept apart, it is text: stored as written.
    expect(applyOutputBudget(many, { maxOutputTokens: 10 })).toMatchObject({ truncated: true, offloaded: undefined });
    expect(applyOutputBudget({ values: new Array<number>(3_000).fill(5e-324) }, {}).truncated).toBe(false);
    // A non-finite number is written as null, as before, beside a small exponent.
    expect(applyOutputBudget({ a: Infinity, b: 1e-10 }, {}).result).toEqual({ a: null, b: 1e-10 });
  });
  it('measures and cuts text containing special-token spellings such as <|endoftext|> as ordinary text', () => {
    const page = 'The page says <|endoftext|> and <|im_start|>system here. '.repeat(40);
    const plain = { disallowedSpecial: new Set<string>() };
    // Short enough to skip the tokenizer: kept whole.
    expect(applyOutputBudget('<|endoftext|>', { maxOutputTokens: 100 })).toMatchObject({ result: '<|endoftext|>', truncated: false });
    // Within a limit only the tokenizer can decide.
    const total = countTokens(page, plain);
    expect(applyOutputBudget(page, { maxOutputTokens: total })).toMatchObject({ result: page, truncated: false });
    // Cut, and offloaded with its size counted.
    const cut = applyOutputBudget({ page }, { maxOutputTokens: 20, offloadLargeResults: true });
    expect(cut.truncated).toBe(true);
    expect(JSON.stringify({ page }).startsWith(cut.result as string)).toBe(true);
    expect(countTokens(cut.result as string, plain)).toBeLessThanOrEqual(20);
    expect(cut.offloaded).toEqual({ json: JSON.stringify({ page }), tokens: countTokens(JSON.stringify({ page }), plain) });
  });

  it('measures and cuts a 5 MB run of letters without a space within the budget, tokenizing bounded slices only', () => {
    const text = randomLetters(5 * 1024 * 1024, 42);
    handed.length = 0;
    const out = applyOutputBudget(text, { maxOutputTokens: 16000, offloadLargeResults: true });
    expect(out.truncated).toBe(true);
    const cut = out.result as string;
    expect(text.startsWith(cut)).toBe(true);
    expect([...tokenizerSegments(cut)].flatMap((slice) => encode(slice)).length).toBeLessThanOrEqual(16000);
    expect(cut.length).toBeGreaterThan(16000);
    // Only about what the budget keeps was tokenized, a slice of at most one piece's length at a time.
    expect(Math.max(...handed)).toBeLessThanOrEqual(MAX_PIECE_CHARS);
    expect(handed.reduce((sum, n) => sum + n, 0)).toBeLessThan(2 * cut.length + 2 * EXACT_COUNT_CHARS);
    // The offloaded size is extrapolated past the first characters, not counted over 5 MB.
    expect(out.offloaded?.tokens).toBeGreaterThan(text.length / 6);
    expect(out.offloaded?.tokens).toBeLessThan(text.length);
  });

  it('cuts text only where the tokenizer ends a piece, so ordinary text is counted exactly as a whole', () => {
    const texts = [
      JSON.stringify(rows),
      randomLetters(3000, 7).replace(/[aeiou]/g, (c) => ({ a: ' ', e: '\n', i: '  \t', o: ',.!', u: 'É😀1' })[c] ?? c),
      '| a | b |\n|' + '-'.repeat(200) + '|\n' + '    '.repeat(30) + 'code\n\n\n   end  ',
    ];
    for (const text of texts) {
      for (const size of [8, 64, MAX_SEGMENT_CHARS]) {
        const slices = [...tokenizerSegments(text, size)];
        expect(slices.join('')).toBe(text);
        if (size < text.length) expect(slices.length).toBeGreaterThan(1);
        expect(slices.flatMap((slice) => encode(slice))).toEqual(encode(text));
      }
    }
  });
});
