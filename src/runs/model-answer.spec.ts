import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import {
  assemble,
  jsonChars,
  MAX_CHUNKS_PER_ANSWER,
  MAX_FINISH_REASON_CHARS,
  MAX_EMPTY_CHUNKS_PER_ANSWER,
  MAX_TOOL_CALL_ID_CHARS,
  MAX_TOKENS_PER_ANSWER,
  MAX_TOOL_CALLS_PER_ANSWER,
  ModelError,
} from './model-answer';

async function* chunks(...items: unknown[]): AsyncIterable<ChatCompletionChunk> {
  for (const item of items) yield item as ChatCompletionChunk;
}

const delta = (d: object, finish: string | null = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

describe('assemble', () => {
  it('joins content deltas and parallel tool calls by index, with usage', async () => {
    const turn = await assemble(
      chunks(
        delta({ role: 'assistant', content: '' }),
        delta({ tool_calls: [{ index: 1, id: 'b', function: { name: 'two', arguments: '' } }] }),
        delta({ tool_calls: [{ index: 0, id: 'a', function: { name: 'one', arguments: '{"x"' } }] }),
        delta({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, 'tool_calls'),
        { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } },
      ),
    );
    expect(turn).toEqual({
      content: '',
      toolCalls: [
        { id: 'a', name: 'one', arguments: '{"x":1}' },
        { id: 'b', name: 'two', arguments: '{}' },
      ],
      usage: { inputTokens: 3, outputTokens: 4 },
      finishReason: 'tool_calls',
    });
  });

  it('gives a call without an id one; ignores other choices', async () => {
    const turn = await assemble(chunks(delta({ tool_calls: [{ function: { name: 'x' } }] }), { choices: [{ index: 1, delta: { content: 'other' } }] }));
    expect(turn.toolCalls).toEqual([{ id: 'call_0', name: 'x', arguments: '' }]);
    expect(turn.content).toBeNull();
  });

  it('two calls of one answer under one id (or an id given to an id-less call) get ids of their own, in order', async () => {
    const turn = await assemble(
      chunks(
        delta({
          tool_calls: [
            { index: 0, id: 'dup', function: { name: 'a', arguments: '{}' } },
            { index: 1, id: 'dup', function: { name: 'b', arguments: '{"x":1}' } },
            { index: 2, id: 'dup~2', function: { name: 'c', arguments: '{}' } },
            { index: 3, function: { name: 'd' } },
            { index: 4, id: 'call_3', function: { name: 'e' } },
          ],
        }),
      ),
    );
    expect(turn.toolCalls.map((c) => [c.id, c.name])).toEqual([
      ['dup', 'a'],
      ['dup~2', 'b'],
      ['dup~2~2', 'c'],
      ['call_3', 'd'],
      ['call_3~2', 'e'],
    ]);
  });

  it('a call id longer than MAX_TOOL_CALL_ID_CHARS is replaced by one of its own', async () => {
    const long = 'x'.repeat(MAX_TOOL_CALL_ID_CHARS + 1);
    const ok = 'y'.repeat(MAX_TOOL_CALL_ID_CHARS);
    const turn = await assemble(
      chunks(
        delta({
          tool_calls: [
            { index: 0, id: long, function: { name: 'a' } },
            { index: 1, id: ok, function: { name: 'b' } },
          ],
        }),
      ),
    );
    expect(turn.toolCalls.map((c) => c.id)).toEqual(['call_0', ok]);
  });

  it('what no column can hold becomes U+FFFD (U+0000, a lone surrogate); a pair split across deltas is kept whole', async () => {
    const turn = await assemble(
      chunks(
        delta({ content: 'a\u0000b \ud83d' }),
        delta({ content: '\ude00 c\udc00' }),
        delta({ tool_calls: [{ index: 0, id: 'i\u0000', function: { name: 'n\ud800', arguments: '{"q":"\u0000"}' } }] }, 'tool_calls'),
      ),
    );
    expect(turn.content).toBe('a\ufffdb 😀 c\ufffd');
    expect(turn.toolCalls).toEqual([{ id: 'i\ufffd', name: 'n\ufffd', arguments: '{"q":"\ufffd"}' }]);
  });

  it('a finish reason is kept to its first MAX_FINISH_REASON_CHARS characters (attack round 13, K-F1)', async () => {
    // Before the fix the whole reason was kept: 4 MiB of it made each step's model.completed event 4 MB.
    const turn = await assemble(chunks(delta({ content: 'x' }), delta({}, 'stop'.repeat(1_000_000))));
    expect(turn.finishReason).toBe('stop'.repeat(MAX_FINISH_REASON_CHARS / 4));
    // A cut between the halves of a pair leaves no lone surrogate (jsonb refuses one).
    const split = await assemble(chunks(delta({ content: 'x' }, 'a'.repeat(MAX_FINISH_REASON_CHARS - 1) + '\u{1F600}')));
    expect(split.finishReason).toBe('a'.repeat(MAX_FINISH_REASON_CHARS - 1) + '\uFFFD');
  });

  it("a provider's usage that is not a count counts as 0; a finish reason that is not text is ignored", async () => {
    const turn = await assemble(
      chunks({ choices: [{ index: 0, delta: { content: 'x' }, finish_reason: { odd: true } }], usage: { prompt_tokens: '7', completion_tokens: Infinity } }),
    );
    expect([turn.usage, turn.finishReason]).toEqual([{ inputTokens: 0, outputTokens: 0 }, null]);
    const huge = await assemble(
      chunks({ choices: [{ index: 0, delta: { content: 'x' } }], usage: { prompt_tokens: 2 ** 53 - 1, completion_tokens: MAX_TOKENS_PER_ANSWER } }),
    );
    expect(huge.usage).toEqual({ inputTokens: 0, outputTokens: MAX_TOKENS_PER_ANSWER });
  });

  it('an answer with more tool calls than the cap is refused as soon as one too many starts, and not retried', async () => {
    const call = (index: number) => delta({ tool_calls: [{ index, id: `c${index}`, function: { name: 'x', arguments: '{}' } }] });
    const atCap = await assemble(chunks(...Array.from({ length: MAX_TOOL_CALLS_PER_ANSWER }, (_, i) => call(i))));
    expect(atCap.toolCalls).toHaveLength(MAX_TOOL_CALLS_PER_ANSWER);
    let read = 0;
    async function* endless(): AsyncIterable<ChatCompletionChunk> {
      for (;;) yield call(read++) as ChatCompletionChunk;
    }
    await expect(assemble(endless())).rejects.toMatchObject({ code: 'model_error', retryable: false });
    expect(read).toBe(MAX_TOOL_CALLS_PER_ANSWER + 1);
  });

  it("an answer past the cap (text, or a call's arguments) is refused whole, and not retried", async () => {
    await expect(assemble(chunks(delta({ content: 'x'.repeat(6) }), delta({ content: 'y'.repeat(5) })), 10)).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: expect.stringContaining('longer than 10 characters'),
    });
    await expect(
      assemble(chunks(delta({ tool_calls: [{ index: 0, id: 'a', function: { name: 'n', arguments: '{"q":"' + 'z'.repeat(20) + '"}' } }] })), 10),
    ).rejects.toMatchObject({
      retryable: false,
    });
    expect((await assemble(chunks(delta({ content: 'x'.repeat(10) })), 10)).content).toBe('x'.repeat(10));
  });

  it('counts an answer as JSON writes it, as it is stored and sent: 1,990,000 U+0001 were 11.9 MB (attack round 9)', async () => {
    for (let c = 0; c < 0x10000; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const text = String.fromCharCode(c);
      expect(jsonChars(text)).toBe(JSON.stringify(text).length - 2);
    }
    expect(jsonChars('a\u0001"\\\n€😀')).toBe(1 + 6 + 2 + 2 + 2 + 1 + 2);
    await expect(assemble(chunks(delta({ content: '\u0001\u0001' })), 10)).rejects.toMatchObject({ code: 'model_error', retryable: false });
    expect((await assemble(chunks(delta({ content: '\u0001abcd' })), 10)).content).toBe('\u0001abcd');
  });

  it('a stream with no answer, or chunks that are not objects, is a retryable model error', async () => {
    await expect(assemble(chunks(delta({})))).rejects.toMatchObject({ code: 'model_error', retryable: true });
    await expect(assemble(chunks(null))).rejects.toBeInstanceOf(ModelError);
  });

  it('a stream of chunks that add nothing (empty deltas, a role alone, empty text, other choices, no choices) fails past the cap, read no further, not retried, however it would end', async () => {
    const nothing = [delta({}), delta({ role: 'assistant' }), delta({ content: '' }), { choices: [{ index: 1, delta: { content: 'x' } }] }, { choices: [] }];
    let read = 0;
    async function* flood(): AsyncIterable<ChatCompletionChunk> {
      while (read < 2 * MAX_EMPTY_CHUNKS_PER_ANSWER) yield nothing[read++ % nothing.length] as ChatCompletionChunk;
      yield delta({ content: 'done' }, 'stop') as ChatCompletionChunk;
    }
    await expect(assemble(flood())).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: expect.stringContaining(`more than ${MAX_EMPTY_CHUNKS_PER_ANSWER} chunks that added nothing`),
    });
    expect(read).toBe(MAX_EMPTY_CHUNKS_PER_ANSWER + 1);
  });

  it("chunks of reasoning text, a role-only first chunk and the usage chunk are not empty; chunks that add nothing count across the answer's text", async () => {
    const reasoning = Array.from({ length: MAX_EMPTY_CHUNKS_PER_ANSWER + 10 }, (_, i) =>
      delta(i % 2 ? { reasoning_content: 'hm' } : { content: null, reasoning: 'hm' }),
    );
    const turn = await assemble(
      chunks(delta({ role: 'assistant', content: '' }), ...reasoning, delta({ content: 'done' }, 'stop'), {
        choices: [],
        usage: { prompt_tokens: 1, completion_tokens: 2 },
      }),
    );
    expect(turn).toMatchObject({ content: 'done', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 2 } });
    // Empty chunks between the words of an answer are still counted: a few words do not reset the count.
    const padded = Array.from({ length: MAX_EMPTY_CHUNKS_PER_ANSWER * 1.1 }, (_, i) => (i % 1000 === 0 ? delta({ content: 'w' }) : delta({})));
    await expect(assemble(chunks(...padded, delta({ content: '.' }, 'stop')))).rejects.toMatchObject({ retryable: false });
  });

  it('past MAX_CHUNKS_PER_ANSWER chunks in all, each adding a little (reasoning, one character), the answer fails, read no further, not retried', async () => {
    let read = 0;
    async function* flood(): AsyncIterable<ChatCompletionChunk> {
      while (read < 2 * MAX_CHUNKS_PER_ANSWER) yield delta(read++ % 2 ? { reasoning_content: 'x' } : { content: 'x' }) as ChatCompletionChunk;
      yield delta({}, 'stop') as ChatCompletionChunk;
    }
    await expect(assemble(flood())).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: expect.stringContaining(`more than ${MAX_CHUNKS_PER_ANSWER} chunks`),
    });
    expect(read).toBe(MAX_CHUNKS_PER_ANSWER + 1);
  });
});
