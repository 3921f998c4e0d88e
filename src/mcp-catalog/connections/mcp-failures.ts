import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, type Transport } from '@modelcontextprotocol/client';
import { CleanStdioTransport } from './clean-stdio.transport';

/** Why talking to an MCP server failed, in API.md's codes, with messages that never carry a credential. */

export type McpFailureCode = 'upstream_unavailable' | 'timeout' | 'egress_refused' | 'tool_error' | 'result_too_large';

/** Why talking to a server failed, in the codes API.md gives failed calls. The message never carries a credential. */
export class McpUpstreamError extends Error {
  constructor(
    readonly code: McpFailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'McpUpstreamError';
  }
}

/** Turns whatever failed into one of API.md's codes, with a message fit for an answer. */
export function classify(err: unknown, target: { credentials: Readonly<Record<string, string>> }, transport?: Transport): McpUpstreamError {
  const redact = (message: string) => redactSecrets(message, target.credentials);
  if (err instanceof McpUpstreamError) return new McpUpstreamError(err.code, redact(err.message));
  const code = codeOf(err);
  if (code === 'egress_refused') return new McpUpstreamError('egress_refused', redact(`the egress policy refused the connection: ${messageOf(err)}`));
  if (code === 'timeout') return new McpUpstreamError('timeout', 'the MCP server did not answer in time');
  if (code === 'response_too_large')
    return new McpUpstreamError('result_too_large', redact(`the MCP server's answer was too large, not read further: ${messageOf(err)}`));
  if (err instanceof SdkHttpError) {
    // The transport follows redirects only within the server's origin (then through the egress
    // policy again); one that leaves it is refused, like any address the policy was not asked about.
    if ([301, 302, 303, 307, 308].includes(err.status)) {
      return new McpUpstreamError('egress_refused', redact(`the MCP server redirected the request to another origin; not followed`));
    }
    return new McpUpstreamError('upstream_unavailable', redact(`the MCP server answered HTTP ${err.status || 'error'}`));
  }
  if (err instanceof SdkError) {
    if (err.code === SdkErrorCode.RequestTimeout) return new McpUpstreamError('timeout', 'the MCP server did not answer in time');
    if (err.code === SdkErrorCode.ConnectionClosed) {
      const tail = transport instanceof CleanStdioTransport && transport.stderr ? ` (its last output: ${transport.stderr.trim().slice(-300)})` : '';
      return new McpUpstreamError('upstream_unavailable', redact(`the MCP server closed the connection${tail}`));
    }
    return new McpUpstreamError('upstream_unavailable', redact(`the MCP server could not be used: ${err.message}`.slice(0, 1000)));
  }
  if (err instanceof ProtocolError) {
    // The server understood the request and refused it with a JSON-RPC error.
    return new McpUpstreamError('tool_error', redact(`the MCP server answered with an error: ${err.message}`.slice(0, 1000)));
  }
  if (isAbort(err)) return new McpUpstreamError('timeout', 'the call was aborted before the MCP server answered');
  return new McpUpstreamError('upstream_unavailable', redact(`the MCP server could not be reached: ${messageOf(err)}`.slice(0, 1000)));
}

function codeOf(err: unknown): string | undefined {
  let current: unknown = err;
  for (let i = 0; i < 6 && current && typeof current === 'object'; i++) {
    const code = (current as { code?: unknown }).code;
    if (code === 'egress_refused' || code === 'timeout' || code === 'response_too_large') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const inner = cause instanceof Error && cause.message && cause.message !== err.message ? ` (${cause.message})` : '';
  return `${err.message}${inner}`;
}

/** A server (or a library) may echo a request back in an error; no credential leaves in a message. */
export function redactSecrets(message: string, credentials: Readonly<Record<string, string>>): string {
  let out = message;
  for (const value of Object.values(credentials)) {
    if (value.length === 0) continue;
    out = out.split(value).join('[redacted]');
    // The token part of `Bearer <token>` alone, too.
    const token = /^\S+\s+(\S{6,})$/.exec(value)?.[1];
    if (token) out = out.split(token).join('[redacted]');
  }
  return out;
}

/**
 * A server may echo a request back in a successful answer too (a debugging server shows the
 * headers it got): every string of a result, keys included, gets the same redaction as a message,
 * before the result is stored, returned to any key that may read the call, or given to a model.
 */
export function redactSecretsDeep<T>(value: T, credentials: Readonly<Record<string, string>>): T {
  if (!Object.values(credentials).some((v) => v.length > 0)) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactSecrets(v, credentials);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, inner]) => [redactSecrets(k, credentials), walk(inner)]));
    }
    return v;
  };
  return walk(value) as T;
}
