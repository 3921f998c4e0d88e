import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ThinkingEffort } from '../capabilities/builtin/thinking/thinking.config';
import { withoutNulCharacters } from '../common/nul-character';
import { redactSecrets, redactSecretsDeep } from '../common/redact-secrets';
import { LruCache } from '../common/lru-cache';
import { urlQuerySecrets } from '../common/url-secrets';
import { EgressTooLargeError } from '../egress/egress-policy';
import { assemble, MAX_CHUNKS_PER_ANSWER, ModelError, type ModelTurn } from './model-answer';
import { completionChunks } from './model-stream';

export { ModelError, type ModelTurn };

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
  /** The request, retried in this process (each wait here) until it answers or the retries are spent. */
  complete(req: ModelRequest): Promise<ModelTurn>;
  /**
   * One attempt of the request, `attempt` retries having failed before it (0: the first). A failure
   * worth another attempt, with one left, is a ModelRetry saying how long to wait; the caller waits
   * wherever it likes (a run gives its slot back meanwhile). Otherwise as `complete`.
   */
  attempt(req: ModelRequest, attempt: number): Promise<ModelTurn>;
}

/** The provider failed in a way another attempt may not (a 429, a 5xx, a timeout), and the policy has one left. */
export class ModelRetry extends Error {
  constructor(
    readonly afterMs: number,
    readonly failure: ModelError,
  ) {
    super(failure.message);
  }
}

/** `deadlineMs`: how long the whole exchange, streamed body included, may take (EgressRequestInit's). */
export type FetchLike = (url: string, init?: RequestInit & { deadlineMs?: number; maxBytes?: number }) => Promise<Response>;

/**
 * The most bytes one answer may be streamed in: MAX_CHUNKS_PER_ANSWER chunks of 512 bytes (OpenAI's
 * are about 250 with their ids, Azure's about 450 with their content filter results), so the
 * longest answers today take half of it. Past it the call fails and is not tried again.
 */
export const MAX_STREAM_BYTES = MAX_CHUNKS_PER_ANSWER * 512;

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
 * Providers (and their models) found not to accept `reasoning_effort`, so it is not sent again.
 * Bounded: any organization's admin names providers and models, and a Set kept every one for good.
 */
const noReasoningEffort = new LruCache<string, true>(10_000);

/**
 * An OpenAI-compatible provider (OpenAI, Azure OpenAI's v1 API, vLLM, Ollama, LM Studio...) through
 * the official client. Our retry loop replaces the client's, so that backoff, `Retry-After` and the
 * give-up point are ours and testable; every connection goes through the `fetch` it is given (the
 * egress policy).
 */
export class OpenAiCompatibleModel implements ChatModel {
  private readonly client: OpenAI;
  /** What the provider's words must not show (redactSecrets): the key sent to it, and what its URL hides. */
  private readonly secrets: Readonly<Record<string, string>>;

  constructor(
    private readonly providerId: string,
    baseUrl: string,
    apiKey: string | null,
    fetch: FetchLike,
    private readonly policy: RetryPolicy,
    private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void> = abortableSleep,
  ) {
    // And the token-shaped segments of its URL's path, which answers show `[redacted]` (a gateway's
    // account or key in the path): a provider quoting its URL in an error ("Invalid URL (POST /v1/…)")
    // showed it to every reader of the run (attack round 13, K-F2).
    this.secrets = { ...urlQuerySecrets(baseUrl), ...(apiKey === null ? {} : { apiKey }) };
    this.client = new OpenAI({
      baseURL: baseUrl,
      // Local servers (Ollama, LM Studio) take no key; the client insists on a string.
      apiKey: apiKey ?? 'none',
      // The connection may stream for as long as the call may last, not just EGRESS_TIMEOUT_MS,
      // and read no more than MAX_STREAM_BYTES.
      fetch: async (url, init) =>
        errorBodyCut(await fetch(String(url), { ...init, deadlineMs: policy.timeoutMs + CONNECTION_DEADLINE_MARGIN_MS, maxBytes: MAX_STREAM_BYTES })),
      maxRetries: 0,
      timeout: policy.timeoutMs,
      // What goes wrong is reported in the run's error; the client would print provider text to the console.
      logLevel: 'off',
    });
  }

  async complete(req: ModelRequest): Promise<ModelTurn> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(req, attempt);
      } catch (err) {
        if (!(err instanceof ModelRetry)) throw err;
        await this.sleep(err.afterMs, req.signal);
      }
    }
  }

  async attempt(req: ModelRequest, attempt: number): Promise<ModelTurn> {
    const key = `${this.providerId}/${req.model}`;
    let withEffort = req.reasoningEffort !== undefined && noReasoningEffort.get(key) === undefined;
    for (;;) {
      try {
        return await this.once(req, withEffort);
      } catch (raw) {
        const err = classify(raw, this.secrets);
        // Only a refusal of a request that carried it: a provider that named the parameter in
        // every 400 was asked again without it, and again, for ever (650 requests a second, attack round 9).
        if (err.status === 400 && withEffort && mentionsReasoningEffort(raw)) {
          // The model does not take a reasoning effort: ask again without it, and remember.
          noReasoningEffort.set(key, true);
          withEffort = false;
          continue;
        }
        if (!err.retryable || attempt >= this.policy.retries || req.signal?.aborted) throw err;
        const backoff = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** attempt);
        // Full jitter, but never sooner than the provider asked.
        throw new ModelRetry(Math.max(Math.round(Math.random() * backoff), Math.min(err.retryAfterMs ?? 0, this.policy.maxDelayMs * 4)), err);
      }
    }
  }

  private async once(req: ModelRequest, withEffort: boolean): Promise<ModelTurn> {
    const body: ChatCompletionCreateParamsStreaming = {
      model: req.model,
      messages: req.messages,
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.tools.length > 0) body.tools = req.tools;
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.maxOutputTokens !== undefined) body.max_completion_tokens = req.maxOutputTokens;
    if (withEffort && req.reasoningEffort) body.reasoning_effort = req.reasoningEffort;
    // The client's own timeout stops once the headers arrive, and a stream aborted through its signal
    // ends as if the provider had finished: the deadline over the whole answer is ours, checked after.
    const deadline = AbortSignal.timeout(this.policy.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
    let turn: ModelTurn;
    try {
      // The client sends the request and reads its errors; the stream is read by completionChunks.
      turn = await assemble(completionChunks(await this.client.chat.completions.create(body, { signal }).asResponse()));
    } catch (err) {
      throw this.interruption(req, deadline) ?? err;
    }
    const interrupted = this.interruption(req, deadline);
    if (interrupted) throw interrupted;
    // A provider may echo the key it was sent in its answer as in its errors: the answer is stored
    // with the run, shown to its readers and sent to webhooks.
    return redactSecretsDeep(turn, this.secrets);
  }

  /** A cancel of the run is not retried; the provider running out of time is, like a broken stream. */
  private interruption(req: ModelRequest, deadline: AbortSignal): Error | undefined {
    if (req.signal?.aborted) return new OpenAI.APIUserAbortError();
    if (deadline.aborted) return new ModelError('model_error', `The provider did not finish its answer within ${this.policy.timeoutMs} ms.`, true);
    return undefined;
  }
}

function classify(raw: unknown, secrets: Readonly<Record<string, string>>): ModelError {
  const messageOf = (r: unknown) => providerText(r, secrets);
  if (raw instanceof ModelError) return raw;
  const code = (raw as { code?: unknown })?.code ?? (raw as { cause?: { code?: unknown } })?.cause?.code;
  if (code === 'egress_refused') return new ModelError('egress_refused', messageOf(raw), false);
  // The same provider would stream as much again.
  if (raw instanceof EgressTooLargeError) {
    return new ModelError('model_error', `The provider streamed more than ${MAX_STREAM_BYTES} bytes for one answer; none of it was kept.`, false);
  }
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

/**
 * The most of a provider's error body read, and of its words looked at: an error of 100 MB of
 * `x x x …` (the client read it whole, up to MAX_STREAM_BYTES) took 61 s of the event loop to put
 * on one line, three times a failure (attack round 13, K-F5). Real ones are a few hundred bytes.
 */
export const MAX_PROVIDER_ERROR_CHARS = 64 * 1024;
/** What ends an error body errorBodyCut cut (then no longer JSON, so the client quotes it as text). */
const BODY_CUT = ' [cut]';
/** Longer than any spelling of a key redactSecrets looks for (4,096 characters URL-encoded, base64, JSON-escaped). */
const MAX_SECRET_SPELLING_CHARS = 16 * 1024;

/** The provider's words, cut short and on one line: they end up in a run's error, never with its key. */
function providerText(raw: unknown, secrets: Readonly<Record<string, string>>): string {
  const whole = raw instanceof Error ? raw.message : String(raw);
  const cut = whole.length > MAX_PROVIDER_ERROR_CHARS || whole.endsWith(BODY_CUT);
  // Redacted before the cut, which could otherwise leave the start of a key that no longer matches whole.
  let text = redactSecrets((cut ? whole.slice(0, MAX_PROVIDER_ERROR_CHARS) : whole).replace(/\s+/g, ' '), secrets);
  // A key the first cut split no longer matches whole: shown only when far past what is kept (not
  // when spaces before it, made one, brought it near the start).
  if (cut) text = text.slice(0, Math.max(0, text.length - MAX_SECRET_SPELLING_CHARS));
  // Stored with the run: no U+0000, and no half of a pair the cut at 500 split (nul-character.ts).
  return withoutNulCharacters(text.slice(0, 500));
}

/**
 * An error answer with its body cut to MAX_PROVIDER_ERROR_CHARS bytes, read no further: the client
 * reads an error's body whole, and parses it. A streamed answer is read by completionChunks, in bounds.
 */
async function errorBodyCut(response: Response): Promise<Response> {
  if (response.ok || !response.body || NULL_BODY_STATUSES.has(response.status)) return response;
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size <= MAX_PROVIDER_ERROR_CHARS) {
      const read = await reader.read();
      if (read.done) break;
      parts.push(read.value);
      size += read.value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const read = Buffer.concat(parts);
  const body = read.length > MAX_PROVIDER_ERROR_CHARS ? Buffer.concat([read.subarray(0, MAX_PROVIDER_ERROR_CHARS), Buffer.from(BODY_CUT)]) : read;
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Statuses a Response may not be made with a body for. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

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
