import type { FetchLike } from '@modelcontextprotocol/client';
import { AsyncLocalStorage } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { MAX_MESSAGE_DEPTH, MAX_MESSAGE_KEYS, messageCheck, MessageCheck } from '../../common/json-shape';
import { McpUpstreamError } from './mcp-failures';

/**
 * What an MCP server may send on one request's streams (its notifications, its own requests, events
 * that do not parse: everything but the answer), and on a session's event stream per minute. The
 * SDK's client parses and dispatches each message on the event loop at about 50 to 90 µs (a dozen
 * schema checks, most failing, and their garbage): a server that answered a call with 12 MiB of
 * progress notifications (about 115,000) held the node for every tenant for 20 s.
 */
export interface MessageLimits {
  maxMessages: number;
  maxBytes: number;
}

/** How much of an event stream the SDK gets to parse in one turn of the event loop (about 75 short messages). */
export const PIECE_BYTES = 8 * 1024;
const MINUTE_MS = 60_000;

/**
 * One request's allowance (for the request's life), or a session's event stream's (refilled at
 * the same amount per minute). Once spent it stays spent: `onSpent` is told once, and every
 * exchange made under it is ended and refused from then on (`signal`), so a stream the SDK would
 * reconnect (at whatever `retry:` the server asks) stays closed.
 */
export class MessageBudget {
  private messages: number;
  private bytes: number;
  private refilledAt = Date.now();
  private readonly stop = new AbortController();

  constructor(
    private readonly limits: MessageLimits,
    /** A request's budget covers all its exchanges; a session's only its event stream (GET): its POSTs carry no messages back. */
    readonly kind: 'request' | 'session',
    private readonly onSpent: (reason: Error) => void,
  ) {
    this.messages = limits.maxMessages;
    this.bytes = limits.maxBytes;
  }

  get signal(): AbortSignal {
    return this.stop.signal;
  }

  get spent(): boolean {
    return this.stop.signal.aborted;
  }

  /** Counts what arrived; false once past the allowance (then whatever arrives is not to be used). */
  charge(messages: number, bytes: number): boolean {
    if (this.spent) return false;
    if (this.kind === 'session') {
      const now = Date.now();
      const share = (now - this.refilledAt) / MINUTE_MS;
      this.refilledAt = now;
      this.messages = Math.min(this.limits.maxMessages, this.messages + share * this.limits.maxMessages);
      this.bytes = Math.min(this.limits.maxBytes, this.bytes + share * this.limits.maxBytes);
    }
    this.messages -= messages;
    this.bytes -= bytes;
    if (this.messages >= 0 && this.bytes >= 0) return true;
    const what = this.messages < 0 ? `${this.limits.maxMessages} messages` : `${this.limits.maxBytes} bytes`;
    const where = this.kind === 'request' ? 'while answering one request' : 'on its event stream within a minute';
    this.refuse(new Error(`the MCP server sent more than ${what} ${where} (notifications, requests of its own); not read further`));
    return false;
  }

  /** Spends what is left: the server sent something not to be read (too much, or nested too deep). */
  refuse(reason: Error): void {
    if (this.spent) return;
    this.onSpent(reason);
    this.stop.abort(reason);
  }
}

/** The budget of the request (or session stream) whose exchange is being made or read, as the SDK's async work carries it. */
export const budgets = new AsyncLocalStorage<MessageBudget>();

/**
 * A fetch whose exchanges are ended once their budget is spent, and whose event streams reach the
 * SDK a piece at a time, one event-loop turn apart: the SDK parses whatever a read hands it in one
 * go (a 64 KiB read is about 600 short messages), so other requests wait at most a piece's work.
 */
export function meteredFetch(fetch: FetchLike): FetchLike {
  return async (input, init) => {
    const budget = budgets.getStore();
    const method = (init?.method ?? 'GET').toUpperCase();
    if (!budget || (budget.kind === 'session' && method !== 'GET')) return fetch(input, init);
    if (budget.spent) throw budget.signal.reason;
    const signal = init?.signal ? AbortSignal.any([init.signal, budget.signal]) : budget.signal;
    const response = await fetch(input, { ...init, signal });
    if (!response.body) return response;
    const eventStream = /^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '');
    const body = eventStream ? pace(response.body, budget) : response.body;
    const read = new Response(bounded(body, messageCheck(eventStream), budget), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    // The SDK resolves a relative Location against it.
    Object.defineProperty(read, 'url', { value: response.url });
    return read;
  };
}

function pace(body: ReadableStream<Uint8Array>, budget: MessageBudget): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let rest: Uint8Array | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        await nextTurn();
        if (!rest || rest.byteLength === 0) {
          const chunk = await reader.read();
          if (chunk.done) return controller.close();
          rest = chunk.value;
        }
        const piece = rest.subarray(0, PIECE_BYTES);
        rest = rest.subarray(piece.byteLength);
        if (!budget.charge(0, piece.byteLength)) {
          await reader.cancel(budget.signal.reason).catch(() => undefined);
          return controller.error(budget.signal.reason);
        }
        controller.enqueue(piece);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * The answer as it arrives, ended with the budget once a message nests past MAX_MESSAGE_DEPTH or
 * names more than MAX_MESSAGE_KEYS distinct members, before the SDK parses it: the request fails
 * at once, saying why.
 */
function bounded(body: ReadableStream<Uint8Array>, check: MessageCheck, budget: MessageBudget): ReadableStream<Uint8Array> {
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const refused = check(chunk);
        if (refused === null) return controller.enqueue(chunk);
        const why =
          refused === 'depth'
            ? `a message nesting deeper than ${MAX_MESSAGE_DEPTH} levels`
            : `a message of more than ${MAX_MESSAGE_KEYS} distinct member names`;
        budget.refuse(new McpUpstreamError('upstream_unavailable', `the MCP server sent ${why}; not read`));
        controller.error(budget.signal.reason);
      },
    }),
  );
}
