import { isInitializeRequest, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { FastifyReply } from 'fastify';
import { MAX_TOOL_NAME_LENGTH } from '../tool-calls/tool-calls.dto';

/** What the MCP endpoint refuses before the SDK sees a message. Pure: no database, no SDK server. */

/**
 * What the SDK would answer badly, answered here: a JSON-RPC batch (which would run many tool
 * calls under one rate-limited request, and which the negotiated protocol revisions no longer
 * have) is -32600; `tools/call` params that are not `{ name, arguments? }` are -32602 with a
 * short message (the 1.x SDK answered -32603 with its whole validation dump). True when answered.
 */
export function refuseMalformed(reply: FastifyReply, body: unknown): boolean {
  if (Array.isArray(body)) {
    sendRpcError(reply, 400, null, ProtocolErrorCode.InvalidRequest, 'JSON-RPC batches are not supported: send one message per request.');
    return true;
  }
  if (isRecord(body) && (typeof body.id === 'string' || typeof body.id === 'number')) {
    const problem = paramsProblem(body);
    if (problem) {
      sendRpcError(reply, 200, body.id, ProtocolErrorCode.InvalidParams, `Invalid params: ${problem}`);
      return true;
    }
  }
  return false;
}

/**
 * The longest `progressToken` served. MCP leaves its length open, and every progress notification
 * of a held call (about one a second for MCP_APPROVAL_WAIT_SECONDS) echoes it: a token of nearly
 * 1 MiB made each held call write 45 MiB, kept by the node for a client that reads nothing
 * (attack round 12, I-F1). Clients use counters and UUIDs.
 */
export const MAX_PROGRESS_TOKEN_LENGTH = 255;

/** Bad params of the methods a tools-only server answers; the SDK answered them -32603 with its validation dump. */
function paramsProblem(body: Record<string, unknown>): string | undefined {
  const meta = isRecord(body.params) ? body.params._meta : undefined;
  if (isRecord(meta) && typeof meta.progressToken === 'string' && meta.progressToken.length > MAX_PROGRESS_TOKEN_LENGTH) {
    return `params._meta.progressToken: at most ${MAX_PROGRESS_TOKEN_LENGTH} characters`;
  }
  switch (body.method) {
    case 'tools/call':
      return callParamsProblem(body.params);
    case 'tools/list':
      if (body.params === undefined) return undefined;
      if (!isRecord(body.params) || Array.isArray(body.params)) return 'params: expected an object';
      if (body.params.cursor !== undefined && typeof body.params.cursor !== 'string') return 'params.cursor: expected a string';
      return undefined;
    case 'initialize':
      return isInitializeRequest(body) ? undefined : 'initialize needs params { protocolVersion: string, capabilities: object, clientInfo: { name, version } }';
    default:
      return undefined;
  }
}

function sendRpcError(reply: FastifyReply, status: number, id: string | number | null, code: number, message: string): void {
  void reply
    .status(status)
    .type('application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }));
}

/** What is wrong with `tools/call` params, in one short line; undefined when they are `{ name, arguments?, _meta? }`. */
function callParamsProblem(params: unknown): string | undefined {
  if (!isRecord(params) || Array.isArray(params)) return 'params: expected an object';
  if (typeof params.name !== 'string') return 'params.name: expected a string';
  // As REST's `tool`: a longer name names no tool, and would be echoed and audited whole.
  if (params.name.length > MAX_TOOL_NAME_LENGTH) return `params.name: at most ${MAX_TOOL_NAME_LENGTH} characters`;
  if (params.arguments !== undefined && (!isRecord(params.arguments) || Array.isArray(params.arguments))) return 'params.arguments: expected an object';
  if (params._meta !== undefined && (!isRecord(params._meta) || Array.isArray(params._meta))) return 'params._meta: expected an object';
  return undefined;
}

/** `http(s)://` on localhost, 127.0.0.1 or [::1], written exactly as a browser sends it. */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) && url.origin === origin;
  } catch {
    return false;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
