import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { ThinkingEffort } from '../capabilities/builtin/thinking/thinking.config';
import { withoutNulCharacters } from '../common/nul-character';
import { redactSecrets } from '../common/redact-secrets';
import { limitSseLines } from './sse-line-limit';

/** One answer of the model, assembled from its stream. */
export interface ModelTurn {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { inputTokens: number; outputTokens: number };
  finishReason: string | null;
}

export interface ModelRequest {
  model: string;
  messages: ChatCompletionMessageParam[];
  tools: ChatCompletionTool[];
  temperature?: number;
  maxOutputTokens?: number;
  reasoningEffort?: ThinkingEffort;
  signal?: AbortSignal;
}

/** What a run calls: one Chat Completions request, retried as the policy says. */
export interface ChatModel {
  complete(req: ModelRequest): Promise<ModelTurn>;
}

/** `deadlineMs`: how long the whole exchange, streamed body included, may take (EgressRequestInit's). */
export type FetchLike = (url: string, init?: RequestInit & { deadlineMs?: number; maxBytes?: number }) => Promise<Response>;

const MAX_STREAM_BYTES = 256 * 1024 * 1024;

/** How much longer than the model's own deadline the connection's is: only a backstop, never what fires. */
const CONNECTION_DEADLINE_MARGIN_MS = 1000;

export interface RetryPolicy {
  /** Attempts after the first. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
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

/** Providers (and their models) found not to accept `reasoning_effort`, so it is not sent again. */
const noReasoningEffort = new Set<string>();

/**
 * An OpenAI-compatible provider (OpenAI, Azure OpenAI's v1 API, vLLM, Ollama, LM Studio...) through
 * the official client. Our retry loop replaces the client's, so that backoff, `Retry-After` and the
 * give-up point are ours and testable; every connection goes through the `fetch` it is given (the
 * egress policy).
 */
export class OpenAiCompatibleModel implements ChatModel {
  private readonly client: OpenAI;
  /** What the provider's words must not show (redactSecrets): the key sent to it. */
  private readonly secrets: Readonly<Record<string, string>>;

  constructor(
    private readonly providerId: string,
    baseUrl: string,
    apiKey: string | null,
    fetch: FetchLike,
    private readonly policy: RetryPolicy,
    private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void> = abortableSleep,
  ) {
    this.secrets = apiKey === null ? {} : { apiKey };
    this.client = new OpenAI({
      baseURL: baseUrl,
      // Local servers (Ollama, LM Studio) take no key; the client insists on a string.
      apiKey: apiKey ?? 'none',
      // The connection may stream for as long as the call may last, not just EGRESS_TIMEOUT_MS.
      // And read no more than an answer of MAX_ANSWER_CHARS could take, framing included (a stream
      // sends a chunk of about 200 bytes for every few characters).
      // And no line of the stream past MAX_SSE_LINE_BYTES (the client's decoder is quadratic in a line's length).
      fetch: async (url, init) =>
        limitSseLines(
          await fetch(String(url), { ...init, deadlineMs: policy.timeoutMs + CONNECTION_DEADLINE_MARGIN_MS, maxBytes: MAX_STREAM_BYTES }),
          (max) => new ModelError('model_error', `The provider streamed a line longer than ${max} bytes; the answer was not read.`, false),
        ),
      maxRetries: 0,
      timeout: policy.timeoutMs,
      // What goes wrong is reported in the run's error; the client would print provider text to the console.
      logLevel: 'off',
    });
  }

  async complete(req: ModelRequest): Promise<ModelTurn> {
    let attempt = 0;
    for (;;) {
      try {
        return await this.once(req);
      } catch (raw) {
        const err = classify(raw, this.secrets);
        if (err.status === 400 && req.reasoningEffort && mentionsReasoningEffort(raw)) {
          // The model does not take a reasoning effort: ask again without it, and remember.
          noReasoningEffort.add(`${this.providerId}/${req.model}`);
          continue;
        }
        if (!err.retryable || attempt >= this.policy.retries || req.signal?.aborted) throw err;
        const backoff = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** attempt);
        // Full jitter, but never sooner than the provider asked.
        const delay = Math.max(Math.round(Math.random() * backoff), Math.min(err.retryAfterMs ?? 0, this.policy.maxDelayMs * 4));
        attempt++;
        await this.sleep(delay, req.signal);
      }
    }
  }

  private async once(req: ModelRequest): Promise<ModelTurn> {
    const body: ChatCompletionCreateParamsStreaming = {
      model: req.model,
      messages: req.messages,
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.tools.length > 0) body.tools = req.tools;
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.maxOutputTokens !== undefined) body.max_completion_tokens = req.maxOutputTokens;
    if (req.reasoningEffort && !noReasoningEffort.has(`${this.providerId}/${req.model}`)) body.reasoning_effort = req.reasoningEffort;
    // The client's own timeout stops once the headers arrive, and a stream aborted through its signal
    // ends as if the provider had finished: the deadline over the whole answer is ours, checked after.
    const deadline = AbortSignal.timeout(this.policy.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
    let turn: ModelTurn;
    try {
      turn = await assemble(await this.client.chat.completions.create(body, { signal }));
    } catch (err) {
      throw this.interruption(req, deadline) ?? err;
    }
    const interrupted = this.interruption(req, deadline);
    if (interrupted) throw interrupted;
    return turn;
  }

  /** A cancel of the run is not retried; the provider running out of time is, like a broken stream. */
  private interruption(req: ModelRequest, deadline: AbortSignal): Error | undefined {
    if (req.signal?.aborted) return new OpenAI.APIUserAbortError();
    if (deadline.aborted) return new ModelError('model_error', `The provider did not finish its answer within ${this.policy.timeoutMs} ms.`, true);
    return undefined;
  }
}

/**
 * The most characters of one answer (its text, and its tool calls' names and arguments) a run keeps:
 * about four times the longest output today's models write. A 60 MB answer was stored three times
 * over (messages, output, events) and answered whole on every read of the run.
 */
export const MAX_ANSWER_CHARS = 2_000_000;

/**
 * The most tool calls one answer may ask for. Models ask for a handful in parallel; an answer with
 * tens of thousands (a broken or hostile provider: the provider is any URL an org admin saves) ran
 * every one and took the node's database down. An answer past it fails the model call: none of its
 * calls runs, and the run fails `model_error` saying why (API.md).
 */
export const MAX_TOOL_CALLS_PER_ANSWER = 128;

/** Puts a streamed answer together: content deltas in order, tool calls by their index. */
export async function assemble(chunks: AsyncIterable<ChatCompletionChunk>, maxChars = MAX_ANSWER_CHARS): Promise<ModelTurn> {
  let size = 0;
  const grow = (text: string) => {
    size += text.length;
    if (size > maxChars) throw new ModelError('model_error', `The provider's answer was longer than ${maxChars} characters; none of it was kept.`, false);
    return text;
  };
  let content = '';
  let sawContent = false;
  let finishReason: string | null = null;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  const usage = { inputTokens: 0, outputTokens: 0 };
  for await (const chunk of chunks) {
    if (chunk === null || typeof chunk !== 'object')
      throw new ModelError('model_error', 'The provider streamed something that is not a completion chunk.', true);
    if (chunk.usage) {
      // Summed into the run's usage: a provider's string or null must not turn the sum into text.
      usage.inputTokens = tokenCount(chunk.usage.prompt_tokens);
      usage.outputTokens = tokenCount(chunk.usage.completion_tokens);
    }
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string') {
        content += grow(delta.content);
        sawContent = true;
      }
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
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    // A call without an id still needs one: the tool message answers it by id.
    .map(([index, c]) => ({ ...c, id: c.id || `call_${index}` }));
  if (!sawContent && toolCalls.length === 0 && finishReason === null) {
    throw new ModelError('model_error', 'The provider ended the stream without an answer.', true);
  }
  // What a provider streams is stored with the run and sent to webhooks: U+0000 and lone surrogates
  // (a stream can hold either; jsonb refuses both) become U+FFFD, as in what tools return.
  return withoutNulCharacters({ content: sawContent ? content : null, toolCalls, usage, finishReason });
}

function tokenCount(n: unknown): number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

function classify(raw: unknown, secrets: Readonly<Record<string, string>>): ModelError {
  const messageOf = (r: unknown) => providerText(r, secrets);
  if (raw instanceof ModelError) return raw;
  const code = (raw as { code?: unknown })?.code ?? (raw as { cause?: { code?: unknown } })?.cause?.code;
  if (code === 'egress_refused') return new ModelError('egress_refused', messageOf(raw), false);
  if (raw instanceof OpenAI.APIUserAbortError) return new ModelError('model_error', 'The model call was aborted.', false);
  if (raw instanceof OpenAI.APIConnectionError) {
    const cause = (raw as { cause?: { code?: unknown } }).cause;
    if (cause?.code === 'egress_refused') return new ModelError('egress_refused', messageOf(cause), false);
    return new ModelError('model_error', `The provider could not be reached: ${messageOf(raw)}`, true);
  }
  if (raw instanceof OpenAI.APIError) {
    const status = raw.status ?? 0;
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    if (
      status === 400 &&
      /context|maximum.*tokens|too long/i.test(messageOf(raw)) &&
      /context_length|context window|maximum context/i.test(messageOf(raw) + (raw.code ?? ''))
    ) {
      return new ModelError('context_length_exceeded', `The provider answered ${status}: ${messageOf(raw)}`, false, status);
    }
    return new ModelError('model_error', `The provider answered ${status}: ${messageOf(raw)}`, retryable, status, retryAfterOf(raw.headers));
  }
  // Not a response the client could read (a body that is not JSON, a stream that breaks off).
  return new ModelError('model_error', `The provider's answer could not be read: ${messageOf(raw)}`, true);
}

function mentionsReasoningEffort(raw: unknown): boolean {
  return /reasoning[_ ]effort/i.test(providerText(raw, {}) + String((raw as { param?: unknown })?.param ?? ''));
}

function retryAfterOf(headers: Headers | undefined): number | undefined {
  const value = headers?.get?.('retry-after-ms') ?? undefined;
  if (value && /^\d+$/.test(value)) return Number(value);
  const seconds = headers?.get?.('retry-after');
  if (!seconds) return undefined;
  if (/^\d+(\.\d+)?$/.test(seconds)) return Math.round(Number(seconds) * 1000);
  const at = Date.parse(seconds);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The provider's words, cut short and on one line: they end up in a run's error, never with its key. */
function providerText(raw: unknown, secrets: Readonly<Record<string, string>>): string {
  const text = raw instanceof Error ? raw.message : String(raw);
  // Redacted before the cut, which could otherwise leave the start of a key that no longer matches whole.
  // Stored with the run: no U+0000, and no half of a pair the cut at 500 split (nul-character.ts).
  return withoutNulCharacters(redactSecrets(text.replace(/\s+/g, ' '), secrets).slice(0, 500));
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
