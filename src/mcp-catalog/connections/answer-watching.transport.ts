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

type OnMessage = NonNullable<StreamableHTTPClientTransport['onmessage']>;

/**
 * Streamable HTTP that fails a request whose answer stream ended without its answer. The SDK's
 * transport notices that end (and gives up resuming a stream the server offered to resume), but
 * its client never hears of it: the call then waited its whole timeout and was recorded
 * `timeout`, when the server had gone away (`upstream_unavailable`) seconds before.
 *
 * `askerOf` names, when a request is sent, who to tell: the caller's own abort, so only the call
 * whose answer was lost fails, never the others sharing the connection.
 */
export class AnswerWatchingTransport extends StreamableHTTPClientTransport {
  private readonly waiting = new Map<RequestId, (reason: Error) => void>();

  constructor(
    url: URL,
    options: StreamableHTTPClientTransportOptions,
    private readonly askerOf: () => ((reason: Error) => void) | undefined,
  ) {
    super(url, options);
    // The client sets `onmessage` after this is built, and the base class reads it as an own field:
    // an accessor in its place sees every answer first, so a request answered is no longer waited on.
    let handler: OnMessage | undefined;
    const seen: OnMessage = (message: JSONRPCMessage) => {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
        if (message.id !== undefined) this.waiting.delete(message.id);
      }
      handler?.(message);
    };
    Object.defineProperty(this, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => (handler ? seen : undefined),
      set: (next: OnMessage | undefined) => {
        handler = next;
      },
    });
  }

  override async send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    const asker = !Array.isArray(message) && isJSONRPCRequest(message) ? this.askerOf() : undefined;
    if (!asker || Array.isArray(message) || !isJSONRPCRequest(message)) return super.send(message, options);
    const id = message.id;
    this.waiting.set(id, asker);
    try {
      await super.send(message, {
        ...options,
        onRequestStreamEnd: () => {
          options?.onRequestStreamEnd?.();
          const tell = this.waiting.get(id);
          if (!tell) return;
          this.waiting.delete(id);
          tell(new SdkError(SdkErrorCode.ConnectionClosed, 'the MCP server ended its answer without answering'));
        },
      });
    } catch (err) {
      this.waiting.delete(id);
      throw err;
    }
  }

  /**
   * The caller's call is over: its requests are no longer waited on. An answer that never came
   * (a server answering JSON under another id, or a 202) left its entry for the connection's life.
   */
  forget(asker: (reason: Error) => void): void {
    for (const [id, tell] of this.waiting) if (tell === asker) this.waiting.delete(id);
  }

  override async close(): Promise<void> {
    this.waiting.clear();
    await super.close();
  }
}
