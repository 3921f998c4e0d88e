import * as tokenizer from 'gpt-tokenizer';
import { MAX_PIECE_CHARS } from '../runtime/output-budget';
import {
  ChatMessage,
  CLEARED_RESULT,
  compactWithoutModel,
  ESTIMATE_EXACT_CHARS,
  ESTIMATE_EXACT_TOTAL_CHARS,
  ESTIMATE_MIN_EXACT_CHARS,
  estimateTokens,
  keptFrom,
  toProviderMessages,
  transcriptChars,
  transcriptOf,
  turnStarts,
} from './conversation';

const convo: ChatMessage[] = [
  { role: 'user', content: 'find A' },
  { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'lookup', arguments: '{"q":"A"}' }] },
  { role: 'tool', toolCallId: 'a', name: 'lookup', content: 'result A' },
  {
    role: 'assistant',
    content: null,
    toolCalls: [
      { id: 'b', name: 'lookup', arguments: '{"q":"B"}' },
      { id: 'c', name: 'lookup', arguments: '{}' },
    ],
  },
  { role: 'tool', toolCallId: 'b', name: 'lookup', content: 'result B' },
  { role: 'tool', toolCallId: 'c', name: 'lookup', content: 'result C' },
  { role: 'assistant', content: 'done' },
];

describe('conversation', () => {
  it('renders the Chat Completions shape: system first, tool calls and their answers by id', () => {
    const out = toProviderMessages('sys', convo, null);
    expect(out[0]).toEqual({ role: 'system', content: 'sys' });
    expect(out[2]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'lookup', arguments: '{"q":"A"}' } }],
    });
    expect(out[3]).toEqual({ role: 'tool', tool_call_id: 'a', content: 'result A' });
    expect(toProviderMessages('  ', convo, null)[0]).toEqual({ role: 'user', content: 'find A' });
  });

  it('a turn is a user message, or an answer of the model with the results of its calls', () => {
    expect(turnStarts(convo)).toEqual([0, 1, 3, 6]);
    expect(keptFrom(convo, 2)).toBe(3);
    expect(keptFrom(convo, 4)).toBe(0);
    expect(keptFrom(convo, 10)).toBe(0);
  });

  it('clear_tool_results clears the results older than the kept turns, once', () => {
    const state = compactWithoutModel(convo, { strategy: 'clear_tool_results', keepLastTurns: 1 }, null)!;
    expect(state).toEqual({ before: 0, clearedBefore: 6 });
    const out = toProviderMessages('', convo, state);
    expect(out.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([CLEARED_RESULT, CLEARED_RESULT, CLEARED_RESULT]);
    expect(compactWithoutModel(convo, { strategy: 'clear_tool_results', keepLastTurns: 1 }, state)).toBeNull();
    // Nothing to clear before the kept turns: no new state.
    expect(compactWithoutModel(convo.slice(0, 2), { strategy: 'clear_tool_results', keepLastTurns: 1 }, null)).toBeNull();
  });

  it('truncate_oldest drops whole turns, never a result without its call', () => {
    const state = compactWithoutModel(convo, { strategy: 'truncate_oldest', keepLastTurns: 2 }, null)!;
    expect(state).toEqual({ before: 3 });
    const out = toProviderMessages('', convo, state);
    expect(out[0]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'b' }, { id: 'c' }] });
    expect(compactWithoutModel(convo, { strategy: 'truncate_oldest', keepLastTurns: 2 }, state)).toBeNull();
    expect(compactWithoutModel(convo, { strategy: 'summarize', keepLastTurns: 2 }, null)).toBeNull();
  });

  it('a summary stands in for what it covers', () => {
    const out = toProviderMessages('sys', convo, { before: 3, summary: 'Looked A up.' });
    expect(out.slice(0, 3).map((m) => m.content)).toEqual(['sys', 'A summary of the earlier conversation:\n\nLooked A up.', null]);
    expect(transcriptOf(convo, 0, 3, 'Before.')).toBe(
      'Summary of what came before:\nBefore.\n\nUser: find A\n\nAssistant called lookup with {"q":"A"}\n\nResult of lookup: result A',
    );
    expect(transcriptOf(convo, 6, 7)).toBe('Assistant: done');
  });

  it('estimates tokens, counting text that spells a special token as text', () => {
    const small = estimateTokens([{ role: 'user', content: 'hello' }], []);
    expect(small).toBeGreaterThan(4);
    expect(estimateTokens([{ role: 'user', content: 'a <|endoftext|> b' }], [{ x: 1 }])).toBeGreaterThan(small);
    expect(estimateTokens(toProviderMessages('', convo, null), [])).toBeGreaterThan(20);
  });

  it('estimates a long unspaced text from its start, in pieces: never the whole text at once', () => {
    // Unspaced CJK text is one pre-token, and byte-pair encoding is quadratic in it: 100,000
    // characters of run input held the node 30 s before every model call (attack round 7).
    const cjk = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join('');
    const spy = jest.spyOn(tokenizer, 'countTokens');
    try {
      const short = estimateTokens([{ role: 'user', content: cjk(ESTIMATE_EXACT_CHARS) }], []);
      const long = estimateTokens([{ role: 'user', content: cjk(10 * ESTIMATE_EXACT_CHARS) }], []);
      // In proportion, as the text's start is.
      expect(long).toBeGreaterThan(9 * (short - 4));
      expect(long).toBeLessThan(11 * short);
      const handed = spy.mock.calls.map((c) => (c[0] as string).length);
      expect(handed.length).toBeGreaterThan(0);
      expect(Math.max(...handed)).toBeLessThanOrEqual(MAX_PIECE_CHARS);
      expect(handed.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2 * ESTIMATE_EXACT_CHARS);
    } finally {
      spy.mockRestore();
    }
  });

  it('counts a share of the whole transcript exactly, not each text up to its bound (attack round 13, K-F3)', () => {
    const words = (n: number, seed: number) =>
      Array.from({ length: n / 8 }, (_, i) => `w${(i * 7919 + seed) % 99_991} `)
        .join('')
        .slice(0, n);
    const results = Array.from({ length: 500 }, (_, i) => ({ role: 'tool' as const, tool_call_id: `c${i}`, content: words(ESTIMATE_EXACT_CHARS, i) }));
    const exact = results.reduce((n, m) => n + 4 + tokenizer.countTokens(m.content), 0);
    const spy = jest.spyOn(tokenizer, 'countTokens');
    try {
      const estimate = estimateTokens(results, []);
      expect(Math.abs(estimate - exact) / exact).toBeLessThan(0.05);
      // Before the fix every one of the 8,192,000 characters was handed to the tokenizer, at every step.
      const handed = spy.mock.calls.reduce((n, c) => n + (c[0] as string).length, 0);
      expect(handed).toBeLessThanOrEqual(ESTIMATE_EXACT_TOTAL_CHARS + results.length * ESTIMATE_MIN_EXACT_CHARS);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('transcriptChars', () => {
  it('counts every character the run keeps: text, tool call ids, names, arguments, and the ids and names tool messages answer', () => {
    const id = 'i'.repeat(1000);
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, toolCalls: [{ id, name: 'tool', arguments: '{}' }] },
      { role: 'tool', toolCallId: id, name: 'tool', content: 'ok' },
    ];
    expect(transcriptChars(messages)).toBe(2 + (1000 + 4 + 2) + (1000 + 4 + 2));
  });

  it('counts them as JSON writes them: a control character six, a quote two (attack round 9)', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: '\u0001' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'tool', arguments: '{"a":1}' }] },
    ];
    expect(transcriptChars(messages)).toBe(6 + (1 + 4 + 9));
  });
});
