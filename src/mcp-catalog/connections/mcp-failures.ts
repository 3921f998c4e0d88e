import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, type Transport } from '@modelcontextprotocol/client';
import { storablePrefix } from '../../common/nul-character';
import { redactSecrets } from '../../common/redact-secrets';
import { urlQuerySecrets } from '../../common/url-secrets';
import { CleanStdioTransport } from './clean-stdio.transport';

// Shared with the model providers' errors (src/runs/model-client.ts); kept here for this module's importers.
export { redactSecrets };

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

/**
 * What nothing a server says may show: the connection's credentials, and the values of its URL's
 * query, where hosted servers take their token (`?api_key=`).
 */
export function secretsOf(target: { credentials: Readonly<Record<string, string>>; url?: string | null }): Readonly<Record<string, string>> {
  return { ...urlQuerySecrets(target.url), ...target.credentials };
}

/** The most of a failure's message kept: it is stored (a connection's error, a call's, an audit event) and shown. */
const MAX_MESSAGE = 1000;

/**
 * Turns whatever failed into one of API.md's codes, with a message fit for an answer and for a
 * jsonb column: credentials redacted before the cut (a cut through one would leave its start),
 * then cut between two characters, U+0000 and lone surrogates replaced. A server's error text
 * holding either made the sync that stored it answer 500 and left the connection `ready`.
 */
export function classify(
  err: unknown,
  target: { credentials: Readonly<Record<string, string>>; url?: string | null },
  transport?: Transport,
): McpUpstreamError {
  const secrets = secretsOf(target);
  const fail = (code: McpFailureCode, message: string) => new McpUpstreamError(code, storablePrefix(redactSecrets(message, secrets), MAX_MESSAGE));
  if (err instanceof McpUpstreamError) return fail(err.code, err.message);
  const code = codeOf(err);
  if (code === 'egress_refused') return fail('egress_refused', `the egress policy refused the connection: ${messageOf(err)}`);
  if (code === 'timeout') return fail('timeout', 'the MCP server did not answer in time');
  if (code === 'response_too_large') return fail('result_too_large', `the MCP server's answer was too large, not read further: ${messageOf(err)}`);
  if (err instanceof SdkHttpError) {
    // The transport follows redirects only within the server's origin (then through the egress
    // policy again); one that leaves it is refused, like any address the policy was not asked about.
    if ([301, 302, 303, 307, 308].includes(err.status)) return fail('egress_refused', `the MCP server redirected the request to another origin; not followed`);
    return fail('upstream_unavailable', `the MCP server answered HTTP ${err.status || 'error'}`);
  }
  if (err instanceof SdkError) {
    if (err.code === SdkErrorCode.RequestTimeout) return fail('timeout', 'the MCP server did not answer in time');
    if (err.code === SdkErrorCode.ConnectionClosed) {
      const tail = transport instanceof CleanStdioTransport && transport.stderr ? ` (its last output: ${transport.stderr.trim().slice(-300)})` : '';
      return fail('upstream_unavailable', `the MCP server closed the connection${tail}`);
    }
    return fail('upstream_unavailable', `the MCP server could not be used: ${err.message}`);
  }
  if (err instanceof ProtocolError) {
    // The server understood the request and refused it with a JSON-RPC error.
    return fail('tool_error', `the MCP server answered with an error: ${err.message}`);
  }
  if (isAbort(err)) return fail('timeout', 'the call was aborted before the MCP server answered');
  return fail('upstream_unavailable', `the MCP server could not be reached: ${messageOf(err)}`);
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
