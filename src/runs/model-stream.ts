import { createParser } from 'eventsource-parser';
import { setImmediate as nextTurn } from 'node:timers/promises';
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { jsonMembersExceed } from '../common/json-depth';
import { ModelError } from './model-answer';
import { MAX_SSE_LINE_BYTES, SseLines, type SseLineLimits } from './sse-line-limit';

/**
 * The most object members one chunk may hold. A real chunk holds a few dozen (its tool calls'
 * arguments are a string in it); a provider (any URL an organization's admin saves) streaming 4 MiB
 * lines of 358,000 made-up member names held the node's event loop a second per line in
 * `JSON.parse`, up to the egress bound's 128 MB a call (attack round 15, R-F5).
 */
export const MAX_CHUNK_MEMBERS = 10_000;
/** A line shorter than this cannot hold enough members to matter, and is not scanned. */
const SCANNED_FROM_CHARS = 64 * 1024;

/** How many chunks are handed on between two turns of the event loop left to other work. */
export const CHUNKS_PER_TURN = 16;

/** The most bytes of the body parsed between two turns of the event loop (a longer line is held, unparsed, until it ends). */
export const BYTES_PER_TURN = 16 * 1024;

/**
 * The chunks of a provider's streamed answer: each `data:` event parsed, up to `[DONE]` (the rest
 * is not read), whatever content type the provider gave it. What had arrived faster than it was
 * parsed was parsed in one run of microtasks: a provider streaming empty deltas as fast as the
 * socket took them held every other request on the node (8 s each at four such streams). Every
 * BYTES_PER_TURN of the body and every CHUNKS_PER_TURN chunks now give other work a turn of the
 * event loop. Events are read by eventsource-parser, linear in what it is given; the openai
 * client's own decoder, which this replaces, copied all it held at every event and every CR (a MiB
 * of blank lines held the node 3 s, one of CRs 7 s, an event of 8 MiB without its blank line 5 s)
 * and read on after `[DONE]`. Lines are bounded first (SseLines), events as long as a line.
 */
export async function* completionChunks(response: Response, limits?: SseLineLimits): AsyncGenerator<ChatCompletionChunk> {
  const refuse = (reason: string) => new ModelError('model_error', `The provider streamed ${reason}; the answer was not read.`, false);
  if (!response.body) throw new ModelError('model_error', 'The provider answered without a body.', true);
  const reader = response.body.getReader();
  const lines = new SseLines(refuse, limits);
  const decoder = new TextDecoder();
  const maxEventChars = limits?.maxLineBytes ?? MAX_SSE_LINE_BYTES;
  const events: string[] = [];
  let tooLong = false;
  const parser = createParser({
    onEvent: (event) => events.push(event.data),
    // Other errors are lines the stream may hold and the client ignored (an unknown field, a bad `retry`).
    onError: (err) => (tooLong ||= err.type === 'max-buffer-size-exceeded'),
    // An event's data lines, joined: what becomes one chunk, as long as one line may be.
    maxBufferSize: maxEventChars,
  });
  /** The chunks of the events parsed so far; true at `[DONE]`. */
  async function* handOn(): AsyncGenerator<ChatCompletionChunk, boolean> {
    if (tooLong) throw refuse(`an event longer than ${maxEventChars} characters`);
    let handed = 0;
    for (const data of events.splice(0)) {
      if (data.startsWith('[DONE]')) return true;
      yield chunkOf(data, response.headers);
      if (++handed % CHUNKS_PER_TURN === 0) await nextTurn();
    }
    return false;
  }
  let ended = false;
  try {
    for (;;) {
      const read = await reader.read();
      if (read.done) {
        ended = true;
        parser.feed(decoder.decode());
        yield* handOn();
        return;
      }
      for (let at = 0; at < read.value.length; at += BYTES_PER_TURN) {
        parser.feed(decoder.decode(lines.take(read.value.subarray(at, at + BYTES_PER_TURN)), { stream: true }));
        if (yield* handOn()) return;
        await nextTurn();
      }
    }
  } finally {
    // Stopped early (an answer past its bounds, `[DONE]`, an error): the connection is closed.
    if (!ended) await reader.cancel().catch(() => undefined);
  }
}

/** What the openai client made of an event: its JSON, or the provider's error it carries. */
function chunkOf(data: string, headers: Headers): ChatCompletionChunk {
  if (data.length > SCANNED_FROM_CHARS && jsonMembersExceed(data, MAX_CHUNK_MEMBERS)) {
    throw new ModelError('model_error', `The provider streamed a chunk of more than ${MAX_CHUNK_MEMBERS} object members; the answer was not read.`, false);
  }
  const chunk = JSON.parse(data) as (ChatCompletionChunk & { error?: unknown }) | null;
  if (chunk && typeof chunk === 'object' && chunk.error) throw new OpenAI.APIError(undefined, chunk.error as object, undefined, headers);
  return chunk as ChatCompletionChunk;
}
