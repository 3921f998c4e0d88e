import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { withoutNulCharacters } from '../common/nul-character';

/** One answer of the model, assembled from its stream. */
export interface ModelTurn {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { inputTokens: number; outputTokens: number };
  finishReason: string | null;
}

/**
 * A failure of the model's provider that the run reports (`failed` with this code); `retryable`
 * ones were retried with backoff first. The message is the provider's, cut short, with the
 * provider's API key redacted: providers echo it ("Incorrect API key provided: sk-…"), and the
 * message is stored in clear with the run and shown to every reader of it.
 */
export class ModelError extends Error {
  constructor(
    readonly code: 'model_error' | 'egress_refused' | 'context_length_exceeded',
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/**
 * The most characters of one answer (its text, and its tool calls' names and arguments) a run keeps,
 * counted as JSON writes them (jsonChars): about four times the longest output today's models
 * write. A 60 MB answer was stored three times over (messages, output, events) and answered whole
 * on every read of the run.
 */
export const MAX_ANSWER_CHARS = 2_000_000;

/** Characters JSON escapes with more than one: control characters (six, or two for \b \t \n \f \r), `"` and `\`. */
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const ESCAPED = /[\u0000-\u001f"\\]/;

/**
 * The characters `text` takes in JSON, which is what a run stores, parses back at each step,
 * sends its provider and answers: an answer of 1,990,000 U+0001 was 2,000,000 characters by
 * length and 11.9 MB as JSON, and a transcript of them 48 MB (attack round 9).
 */
export function jsonChars(text: string): number {
  if (!ESCAPED.test(text)) return text.length;
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || (c >= 0x08 && c <= 0x0d && c !== 0x0b)) n += 1;
    else if (c < 0x20) n += 5;
  }
  return n;
}

/**
 * The most tool calls one answer may ask for. Models ask for a handful in parallel; an answer with
 * tens of thousands (a broken or hostile provider: the provider is any URL an org admin saves) ran
 * every one and took the node's database down. An answer past it fails the model call: none of its
 * calls runs, and the run fails `model_error` saying why (API.md).
 */
export const MAX_TOOL_CALLS_PER_ANSWER = 128;

/** The longest tool call id of a provider's kept as it is (theirs are a few dozen characters). */
export const MAX_TOOL_CALL_ID_CHARS = 256;

/**
 * The most chunks one answer may be streamed in. A stream sends about a chunk a token, and the
 * longest answers today are about 128k tokens, reasoning included: this is twice that. Chunks of
 * reasoning, or of a character each, streamed without end (the provider is any URL an org admin
 * saves) are otherwise bounded only by the stream's bytes, a few seconds of parsing a call.
 */
export const MAX_CHUNKS_PER_ANSWER = 250_000;

/**
 * The most chunks of one answer that add nothing to it: no text (the answer's, a refusal, reasoning
 * under any name), no tool call's id, name or arguments, no usage, no finish reason. A real stream
 * sends a few (the role alone first, a chunk of another choice). A provider streaming
 * `{"choices":[{"delta":{}}]}` as fast as the socket took them made the node parse 80 MiB of them
 * in 10 s; past this the call fails, and is not retried (the provider would do it again).
 */
export const MAX_EMPTY_CHUNKS_PER_ANSWER = 10_000;

/**
 * The longest finish reason kept. The ones providers send are a word (`stop`, `length`,
 * `tool_calls`, `content_filter`); it was kept whole and counted towards no bound, so a provider
 * sending one of 4 MiB with each answer made a run whose transcript held 8 KB store 128 MB of
 * `model.completed` events in 32 steps (attack round 13, K-F1).
 */
export const MAX_FINISH_REASON_CHARS = 64;

/** Puts a streamed answer together: content deltas in order, tool calls by their index. */
export async function assemble(chunks: AsyncIterable<ChatCompletionChunk>, maxChars = MAX_ANSWER_CHARS): Promise<ModelTurn> {
  let size = 0;
  const grow = (text: string) => {
    size += jsonChars(text);
    if (size > maxChars) {
      throw new ModelError('model_error', `The provider's answer was longer than ${maxChars} characters (as JSON writes them); none of it was kept.`, false);
    }
    return text;
  };
  let content = '';
  let sawContent = false;
  let finishReason: string | null = null;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  const usage = { inputTokens: 0, outputTokens: 0 };
  let count = 0;
  let empty = 0;
  for await (const chunk of chunks) {
    if (++count > MAX_CHUNKS_PER_ANSWER) {
      throw new ModelError('model_error', `The provider streamed more than ${MAX_CHUNKS_PER_ANSWER} chunks for one answer; none of it was kept.`, false);
    }
    if (chunk === null || typeof chunk !== 'object')
      throw new ModelError('model_error', 'The provider streamed something that is not a completion chunk.', true);
    let added = Boolean(chunk.usage);
    if (chunk.usage) {
      // Summed into the run's usage: a provider's string or null must not turn the sum into text.
      usage.inputTokens = tokenCount(chunk.usage.prompt_tokens);
      usage.outputTokens = tokenCount(chunk.usage.completion_tokens);
    }
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta: ChatCompletionChunk.Choice.Delta = choice.delta !== null && typeof choice.delta === 'object' ? choice.delta : {};
      if (typeof delta.content === 'string') {
        content += grow(delta.content);
        sawContent = true;
      }
      added ||= carriesText(delta);
      for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        const index = typeof tc.index === 'number' ? tc.index : calls.size;
        if (!calls.has(index) && calls.size >= MAX_TOOL_CALLS_PER_ANSWER) {
          throw new ModelError(
            'model_error',
            `The provider's answer asked for more than ${MAX_TOOL_CALLS_PER_ANSWER} tool calls at once; none of them ran.`,
            false,
          );
        }
        const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
        if (typeof tc.id === 'string' && tc.id) call.id = grow(tc.id);
        if (typeof tc.function?.name === 'string') call.name += grow(tc.function.name);
        if (typeof tc.function?.arguments === 'string') call.arguments += grow(tc.function.arguments);
        calls.set(index, call);
        added ||= Boolean(tc.id || tc.function?.name || tc.function?.arguments);
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason) {
        finishReason = choice.finish_reason.slice(0, MAX_FINISH_REASON_CHARS);
        added = true;
      }
    }
    if (!added && ++empty > MAX_EMPTY_CHUNKS_PER_ANSWER) {
      throw new ModelError(
        'model_error',
        `The provider streamed more than ${MAX_EMPTY_CHUNKS_PER_ANSWER} chunks that added nothing to the answer (no text, tool call, usage or finish reason); none of it was kept.`,
        false,
      );
    }
  }
  const toolCalls = uniqueIds(
    [...calls.entries()]
      .sort(([a], [b]) => a - b)
      // A call without an id still needs one: the tool message answers it by id. An id past
      // MAX_TOOL_CALL_ID_CHARS gets one too: a provider's ids of 15,000 characters, stored twice
      // each step, made the transcript the run keeps 124 MB.
      .map(([index, c]) => ({ ...c, id: c.id && c.id.length <= MAX_TOOL_CALL_ID_CHARS ? c.id : `call_${index}` })),
  );
  if (!sawContent && toolCalls.length === 0 && finishReason === null) {
    throw new ModelError('model_error', 'The provider ended the stream without an answer.', true);
  }
  // What a provider streams is stored with the run and sent to webhooks: U+0000 and lone surrogates
  // (a stream can hold either; jsonb refuses both) become U+FFFD, as in what tools return.
  return withoutNulCharacters({ content: sawContent ? content : null, toolCalls, usage, finishReason });
}

/**
 * The tool message answers a call by its id, and the run keys each call's one execution by it: two
 * calls of one answer under one id (a provider's bug) made the second refused as a reuse of the
 * first's key, or answered with the first's result. A repeated id is told apart by a suffix, in the
 * transcript sent back to the provider as well, so each call runs once and gets its own answer.
 */
function uniqueIds<T extends { id: string }>(calls: T[]): T[] {
  const seen = new Set<string>();
  return calls.map((c) => {
    let id = c.id;
    for (let n = 2; seen.has(id); n++) id = `${c.id}~${n}`;
    seen.add(id);
    return id === c.id ? c : { ...c, id };
  });
}

/**
 * Whether a delta carries text, kept or not: the answer's, a refusal, or reasoning, which providers
 * stream under names of their own (`reasoning_content`, `reasoning`) before the answer.
 */
function carriesText(delta: object): boolean {
  for (const [key, value] of Object.entries(delta)) if (key !== 'role' && typeof value === 'string' && value !== '') return true;
  return false;
}

/**
 * More tokens than any model reads or writes in one answer. A provider's count past it is not a
 * count: safe integers alone, a run summing its steps' went past 2^53 and lost precision (attack
 * round 8).
 */
export const MAX_TOKENS_PER_ANSWER = 1_000_000_000;

function tokenCount(n: unknown): number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_TOKENS_PER_ANSWER ? n : 0;
}
