import { ApiError } from '../../common/api-error';
import { McpUpstreamError } from './mcp-client-pool.service';

/** API.md "MCP catalog": sync on a node that cannot open the connection's stored secrets. */
export function secretUnreadable(): ApiError {
  return new ApiError(
    'internal_error',
    "This server cannot open the connection's stored credentials or URL (sealed under a secrets key it does not hold); nothing was sent to the MCP server and the connection was not changed. The operator has been told (see the server's log).",
  );
}

/** Connecting to a server and listing its tools failed: the API's answer, naming the field for a refused address. */
export function connectFailure(err: unknown, outcome: string): ApiError {
  const failure = err instanceof McpUpstreamError ? err : new McpUpstreamError('upstream_unavailable', 'the MCP server could not be reached');
  if (failure.code === 'egress_refused') {
    return new ApiError('egress_refused', failure.message, [{ path: 'url', code: 'egress_refused', message: failure.message }]);
  }
  return new ApiError(
    'mcp_connect_failed',
    `Could not connect to the MCP server and list its tools (${failure.code}): ${failure.message}. ${outcome}`,
    undefined,
    {
      reason: failure.code,
    },
  );
}
