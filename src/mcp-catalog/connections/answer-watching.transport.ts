import type { FetchLike } from '@modelcontextprotocol/client';
import { Logger } from '@nestjs/common';
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
  type RequestId,
  type StreamableHTTPClientTransportOptions,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { budgets, MessageBudget, MessageLimits, meteredFetch } from './message-budget';
import { McpUpstreamError } from './mcp-failures';
import { fromServerShape, initializeResultShape } from './sdk-shapes';

type OnMessage = NonNullable<StreamableHTTPClientTransport['onmessage']>;
type OnError = NonNullable<StreamableHTTPClientTransport['onerror']>;

/**
 * Replies to the server's own requests on their way at once, per session. The client declares no
 * capability, so all it answers is `ping` (anything else is refused with an error), and each reply
 * is a POST of its own: a server that sent pings as fast as it liked and never answered those POSTs
 * had the node open a socket per ping (3,000 pings, 2,578 sockets in 2 s).
 */
export const MAX_REPLIES_IN_FLIGHT = 4;
/** Replies a session may send in a burst; then one per REPLY_REFILL_MS. Past them a request goes unanswered. */
export const REPLY_BURST = 16;
const REPLY_REFILL_MS = 1000;
/**
 * The least wait before an event stream that ended is opened again, whatever the server's `retry:`
 * asks (the SDK's own first wait). The SDK counts attempts afresh after every stream that ended
 * cleanly, so `retry: 0` and streams ended at once had the node reconnect as fast as it could, for
 * good: about 75 GETs a second for one connection (attack round 14, O-F2).
 */
export const MIN_RECONNECT_MS = 1000;
const logger = new Logger('McpClientPool');

/**
 * Streamable HTTP that fails a request whose answer stream ended without its answer. The SDK's
 * transport notices that end (and gives up resuming a stream the server offered to resume), but
 * its client never hears of it: the call then waited its whole timeout and was recorded
 * `timeout`, when the server had gone away (`upstream_unavailable`) seconds before.
 *
 * `askerOf` names, when a request is sent, who to tell: the caller's own abort, so only the call
 * whose answer was lost fails, never the others sharing the connection.
 *
 * It also sends the client's replies to the server's requests within a budget (MAX_REPLIES_IN_FLIGHT,
 * REPLY_BURST): the server decides how many requests it sends, and each reply costs a socket.
 *
 * And it reads what the server sends within `limits` (message-budget.ts): a request's streams at
 * most `maxMessages` messages beside its answer (then the call fails `upstream_unavailable` and
 * its exchange is ended), the session's event stream as many per minute (then it is closed for the
 * session's life); event streams reach the SDK a piece per event-loop turn.
 */
export class AnswerWatchingTransport extends StreamableHTTPClientTransport {
  private readonly waiting = new Map<RequestId, (reason: Error) => void>();
  /** Requests of the `initialize` handshake on their way: their answers reach the SDK shaped (sdk-shapes.ts). */
  private readonly initializing = new Set<RequestId>();
  /** The budget of each request still waited on: ended with its call, so its streams are not resumed after (O-F2). */
  private readonly budgetOf = new Map<RequestId, MessageBudget>();
  private repliesInFlight = 0;
  private replyTokens = REPLY_BURST;
  private refilledAt = Date.now();
  private dropped = 0;
  /** What the server sends outside any request: its event stream (GET), opened by the `initialized` notification. */
  private readonly session: MessageBudget;

  constructor(
    private readonly url: URL,
    /** `fetch` required: every exchange goes through the egress policy's, never the SDK's default. */
    options: StreamableHTTPClientTransportOptions & { fetch: FetchLike },
    private readonly askerOf: () => ((reason: Error) => void) | undefined,
    private readonly limits: MessageLimits,
  ) {
    super(url, { ...options, fetch: meteredFetch(options.fetch), reconnectionScheduler: reconnectNoSoonerThan(MIN_RECONNECT_MS) });
    this.session = new MessageBudget(limits, 'session', (reason) =>
      logger.warn(`${url.origin}: ${reason.message}; its event stream is closed for this session`),
    );
    // The client sets `onmessage` after this is built, and the base class reads it as an own field:
    // an accessor in its place sees every message first, so a request answered is no longer waited
    // on, and each message is counted against the budget of the stream it came on (the SDK reads a
    // stream in the async context of the send that opened it).
    let handler: OnMessage | undefined;
    const seen: OnMessage = (message: JSONRPCMessage) => {
      // Not the SDK's guards: each is a schema parse, and failing ones are the costly kind.
      const answer = 'id' in message && ('result' in message || 'error' in message);
      if (budgets.getStore()?.charge(answer ? 0 : 1, 0) === false) return;
      let handed = message;
      if (answer && message.id !== undefined) {
        this.waiting.delete(message.id);
        this.budgetOf.delete(message.id);
        if (this.initializing.delete(message.id) && 'result' in message) handed = { ...message, result: initializeResultShape(message.result) as never };
      } else if (!answer && 'method' in message) {
        // Checked by the SDK's own schemas, key by key: only what it uses of them is handed over (O-F4).
        handed = fromServerShape(message);
      }
      handler?.(handed);
    };
    Object.defineProperty(this, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => (handler ? seen : undefined),
      set: (next: OnMessage | undefined) => {
        handler = next;
      },
    });
    // An event that does not parse costs as much as one that does, and reaches only `onerror`.
    let onError: OnError | undefined;
    const counted: OnError = (error: Error) => {
      budgets.getStore()?.charge(1, 0);
      onError?.(error);
    };
    Object.defineProperty(this, 'onerror', {
      configurable: true,
      enumerable: true,
      get: () => (onError ? counted : undefined),
      set: (next: OnError | undefined) => {
        onError = next;
      },
    });
  }

  override async send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    if (!Array.isArray(message) && (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message))) {
      return budgets.run(this.session, () => this.reply(message, options));
    }
    const request = Array.isArray(message) ? message.some((m) => isJSONRPCRequest(m)) : isJSONRPCRequest(message);
    if (!request) return budgets.run(this.session, () => super.send(message, options));
    if (!Array.isArray(message) && isJSONRPCRequest(message) && message.method === 'initialize') this.initializing.add(message.id);
    const asker = !Array.isArray(message) && isJSONRPCRequest(message) ? this.askerOf() : undefined;
    if (!asker || Array.isArray(message) || !isJSONRPCRequest(message)) {
      return budgets.run(new MessageBudget(this.limits, 'request', () => undefined), () => super.send(message, options));
    }
    const id = message.id;
    const budget = new MessageBudget(this.limits, 'request', (reason) => this.fail(id, new McpUpstreamError('upstream_unavailable', reason.message)));
    this.waiting.set(id, asker);
    this.budgetOf.set(id, budget);
    try {
      await budgets.run(budget, () =>
        super.send(message, {
          ...options,
          onRequestStreamEnd: () => {
            options?.onRequestStreamEnd?.();
            this.fail(id, new SdkError(SdkErrorCode.ConnectionClosed, 'the MCP server ended its answer without answering'));
          },
        }),
      );
    } catch (err) {
      this.waiting.delete(id);
      this.budgetOf.delete(id);
      throw err;
    }
  }

  /** Fails a request for its caller, once: its stream ended unanswered, or the server sent past its budget. */
  private fail(id: RequestId, reason: Error): void {
    const tell = this.waiting.get(id);
    if (!tell) return;
    this.waiting.delete(id);
    tell(reason);
  }

  /**
   * The caller's call is over: its requests are no longer waited on. An answer that never came
   * (a server answering JSON under another id, or a 202) left its entry for the connection's life.
   */
  forget(asker: (reason: Error) => void): void {
    for (const [id, tell] of this.waiting) {
      if (tell !== asker) continue;
      this.waiting.delete(id);
      // Its streams are ended and not resumed: the SDK resumed an unanswered call's stream for good (O-F2).
      this.budgetOf.get(id)?.refuse(new McpUpstreamError('timeout', 'the request is over; its streams are not read further'));
      this.budgetOf.delete(id);
    }
  }

  /**
   * A reply to the server, within the session's budget. Past it the reply is dropped rather than
   * queued: JSON-RPC lets a server wait for an answer, so one that floods waits for its own.
   */
  private async reply(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const now = Date.now();
    this.replyTokens = Math.min(REPLY_BURST, this.replyTokens + (now - this.refilledAt) / REPLY_REFILL_MS);
    this.refilledAt = now;
    if (this.repliesInFlight >= MAX_REPLIES_IN_FLIGHT || this.replyTokens < 1) {
      if (this.dropped++ === 0) {
        logger.warn(`the MCP server at ${this.url.origin} sends requests faster than the client answers them; the excess goes unanswered`);
      }
      return;
    }
    this.replyTokens -= 1;
    this.repliesInFlight++;
    try {
      await super.send(message, options);
    } finally {
      this.repliesInFlight--;
    }
  }

  override async close(): Promise<void> {
    this.waiting.clear();
    this.budgetOf.clear();
    this.initializing.clear();
    await super.close();
  }
}

/**
 * The SDK's reconnection, waiting at least `minMs`, and none at all for a stream whose budget is
 * spent (its request is over, or its server sent too much): the SDK schedules it in the async
 * context of the stream that ended, so the budget in force is that stream's.
 */
function reconnectNoSoonerThan(minMs: number) {
  return (reconnect: () => void, delay: number): (() => void) | void => {
    if (budgets.getStore()?.spent) return;
    const timer = setTimeout(reconnect, Math.max(minMs, Number.isFinite(delay) ? delay : minMs));
    return () => clearTimeout(timer);
  };
}
