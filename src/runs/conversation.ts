import { countTokens } from '../runtime/output-budget';
import { jsonChars } from './model-answer';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

/** A message of a run's conversation as clients read it (API.md, Run.messages). */
export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ModelToolCall {
  id: string;
  name: string;
  /** As the model wrote them: JSON text, or not. */
  arguments: string;
}

/** What `settings.compaction` holds (the compaction capability). */
export interface CompactionSettings {
  strategy: 'clear_tool_results' | 'summarize' | 'truncate_oldest';
  keepLastTurns: number;
  summaryPrompt?: string;
}

/** What compaction has done to a run so far; the transcript itself is never rewritten. */
export interface CompactionState {
  /** Messages before this index are represented by `summary` (summarize) or dropped (truncate_oldest). */
  before: number;
  summary?: string;
  /** Tool results before this index are replaced by a note (clear_tool_results). */
  clearedBefore?: number;
}

export const CLEARED_RESULT = '[This tool result was removed to save space. Call the tool again if you need it.]';

export function toProviderMessages(systemPrompt: string, messages: readonly ChatMessage[], state: CompactionState | null): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (systemPrompt.trim() !== '') out.push({ role: 'system', content: systemPrompt });
  const start = state?.before ?? 0;
  if (state?.summary) out.push({ role: 'user', content: `A summary of the earlier conversation:\n\n${state.summary}` });
  messages.forEach((m, i) => {
    if (i < start) return;
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls?.length
          ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
          : {}),
      });
    } else {
      const cleared = state?.clearedBefore !== undefined && i < state.clearedBefore;
      out.push({ role: 'tool', tool_call_id: m.toolCallId, content: cleared ? CLEARED_RESULT : m.content });
    }
  });
  return out;
}

/**
 * What a run keeps may not grow past this many characters: every step's messages are stored (and
 * sent to the model again, and answered on every read of the run), and one answer may hold
 * 2,000,000, so 32 steps reached 64,000,000. Past it the run ends `failed` / `transcript_too_large`.
 */
export const MAX_TRANSCRIPT_CHARS = 8_000_000;

/** The characters a run's messages hold as JSON (jsonChars): their text, tool calls' ids, names, arguments and results. */
export function transcriptChars(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    n += m.content ? jsonChars(m.content) : 0;
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) n += jsonChars(c.id) + jsonChars(c.arguments) + jsonChars(c.name);
    if (m.role === 'tool') n += jsonChars(m.toolCallId) + jsonChars(m.name);
  }
  return n;
}

/** The index at which each turn starts: a user message, or an assistant message with the tool results that answer it. */
export function turnStarts(messages: readonly ChatMessage[]): number[] {
  const starts: number[] = [];
  messages.forEach((m, i) => {
    if (m.role !== 'tool') starts.push(i);
  });
  return starts;
}

/** Where the turns that are never compacted begin (keepLastTurns from the end); 0 when there are no more. */
export function keptFrom(messages: readonly ChatMessage[], keepLastTurns: number): number {
  const starts = turnStarts(messages);
  if (starts.length <= keepLastTurns) return 0;
  return starts[starts.length - keepLastTurns];
}

/**
 * An estimate with the o200k tokenizer: close for OpenAI models, and in the right range for others.
 * Each text is counted exactly up to its share of ESTIMATE_EXACT_TOTAL_CHARS (at least
 * ESTIMATE_MIN_EXACT_CHARS, at most ESTIMATE_EXACT_CHARS), the rest in proportion.
 */
export function estimateTokens(messages: readonly ChatCompletionMessageParam[], tools: readonly unknown[]): number {
  const texts: string[] = [];
  for (const m of messages) {
    texts.push(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
    if ('tool_calls' in m && m.tool_calls) texts.push(JSON.stringify(m.tool_calls));
  }
  if (tools.length) texts.push(JSON.stringify(tools));
  // A share of the whole, not a bound per text: a transcript of 8,000,000 characters in results of
  // 16 KB each was counted whole before every model call, 0.5 s of the event loop a step (attack round 13, K-F3).
  const share = Math.floor(ESTIMATE_EXACT_TOTAL_CHARS / Math.max(1, texts.length));
  const exact = Math.min(ESTIMATE_EXACT_CHARS, Math.max(ESTIMATE_MIN_EXACT_CHARS, share));
  // About four tokens of framing per message.
  let total = 4 * messages.length;
  for (const text of texts) total += tokens(text, exact);
  return total;
}

/**
 * A text's tokens: exactly up to `exact` characters, then in proportion. Every step estimates the
 * whole transcript (up to 8,000,000 characters) again; counted whole, even in bounded pieces, a
 * transcript of unspaced CJK text would take seconds of the event loop a step.
 */
function tokens(text: string, exact: number): number {
  if (text.length <= exact) return countTokens(text);
  return Math.ceil((countTokens(text.slice(0, exact)) * text.length) / exact);
}

/** Characters of one text counted exactly for an estimate, at most (see tokens). */
export const ESTIMATE_EXACT_CHARS = 16 * 1024;
/** Characters of all the texts of one estimate counted exactly, shared among them. */
export const ESTIMATE_EXACT_TOTAL_CHARS = 256 * 1024;
/** Characters of each text counted exactly however many there are (a transcript holds a few thousand). */
export const ESTIMATE_MIN_EXACT_CHARS = 64;

/**
 * The next compaction state for the strategies that need no model (`clear_tool_results`,
 * `truncate_oldest`), or null when nothing older than the kept turns is left to compact.
 * `summarize` is done by the engine (a model call) from `keptFrom`.
 */
export function compactWithoutModel(messages: readonly ChatMessage[], settings: CompactionSettings, state: CompactionState | null): CompactionState | null {
  const from = keptFrom(messages, settings.keepLastTurns);
  if (settings.strategy === 'clear_tool_results') {
    if (from <= (state?.clearedBefore ?? 0)) return null;
    const anyResult = messages.slice(state?.clearedBefore ?? 0, from).some((m) => m.role === 'tool');
    return anyResult ? { before: state?.before ?? 0, clearedBefore: from } : null;
  }
  if (settings.strategy === 'truncate_oldest') {
    return from > (state?.before ?? 0) ? { before: from } : null;
  }
  return null;
}

/** The part of the conversation a summary replaces, as text the summarizing model reads. */
export function transcriptOf(messages: readonly ChatMessage[], from: number, to: number, previousSummary?: string): string {
  const lines: string[] = [];
  if (previousSummary) lines.push(`Summary of what came before:\n${previousSummary}`);
  for (const m of messages.slice(from, to)) {
    if (m.role === 'user') lines.push(`User: ${m.content}`);
    else if (m.role === 'assistant') {
      if (m.content) lines.push(`Assistant: ${m.content}`);
      for (const c of m.toolCalls ?? []) lines.push(`Assistant called ${c.name} with ${c.arguments}`);
    } else lines.push(`Result of ${m.name}: ${m.content}`);
  }
  return lines.join('\n\n');
}
