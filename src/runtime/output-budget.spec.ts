import { countTokens } from 'gpt-tokenizer';
import { applyOutputBudget, MAX_RESULT_CHARS, UnusableResultError } from './output-budget';

describe('applyOutputBudget', () => {
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, title: `Document ${i}`, body: 'lorem ipsum dolor sit amet '.repeat(3) }));

  it('keeps a result within the limit whole, in its JSON form', () => {
    const out = applyOutputBudget({ at: new Date('2030-01-01T00:00:00Z'), n: 1, skip: undefined }, { maxOutputTokens: 100 });
    expect(out).toEqual({ result: { at: '2030-01-01T00:00:00.000Z', n: 1 }, truncated: false });
  });

  it('never cuts without a limit', () => {
    expect(applyOutputBudget(rows, { maxOutputTokens: 0 })).toEqual({ result: rows, truncated: false });
    expect(applyOutputBudget(rows, {})).toEqual({ result: rows, truncated: false });
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
    expect(applyOutputBudget(text, { maxOutputTokens: countTokens(text) })).toEqual({ result: text, truncated: false });
    const cut = applyOutputBudget(text, { maxOutputTokens: 5 });
    expect(cut.truncated).toBe(true);
    expect(text.startsWith(cut.result as string)).toBe(true);
  });

  it('keeps the whole result apart when the tool offloads', () => {
    const out = applyOutputBudget(rows, { maxOutputTokens: 20, offloadLargeResults: true });
    expect(out.truncated).toBe(true);
    expect(out.offloaded).toEqual({ result: rows, tokens: countTokens(JSON.stringify(rows)) });
  });

  it('replaces U+0000, which cannot be stored, in strings and keys, kept or offloaded', () => {
    expect(applyOutputBudget({ 'k\u0000': ['a\u0000b'] }, {})).toEqual({ result: { 'k\uFFFD': ['a\uFFFDb'] }, truncated: false });
    const cut = applyOutputBudget({ rows: 'row\u0000 '.repeat(200) }, { maxOutputTokens: 40, offloadLargeResults: true });
    expect(cut.truncated).toBe(true);
    expect(cut.result).toContain('row\uFFFD');
    expect(cut.result).not.toContain('\\u0000');
    expect(cut.offloaded?.result).toEqual({ rows: 'row\uFFFD '.repeat(200) });
    // The text `\u0000` (a backslash, then u0000) is not the character: it is kept.
    expect(applyOutputBudget('C:\\u0000', {})).toEqual({ result: 'C:\\u0000', truncated: false });
  });

  it('turns undefined into null and refuses what is not JSON or too large', () => {
    expect(applyOutputBudget(undefined, {})).toEqual({ result: null, truncated: false });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => applyOutputBudget(circular, {})).toThrow(UnusableResultError);
    expect(() => applyOutputBudget({ n: 1n }, {})).toThrow(expect.objectContaining({ code: 'invalid_result' }));
    expect(() => applyOutputBudget('x'.repeat(MAX_RESULT_CHARS + 1), {})).toThrow(expect.objectContaining({ code: 'result_too_large' }));
  });
});
