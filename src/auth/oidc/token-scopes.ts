import type { Principal } from '../principal';

/**
 * The scopes an access token may carry, and what each allows. A token without a scope claim is
 * limited by its roles alone; a token with one is limited by its roles *and* these scopes:
 *
 * - `mcp:tools`: call tools (`tools/call`) on an agent's MCP endpoint, and read or act on what a
 *   call became (`tasks/get`: a held call's result). Without it the endpoint still answers the
 *   methods of FREE_MCP_METHODS, so a client can show what it could ask for.
 * - `api`: the REST API (every `/api/v1` route other than the MCP endpoints).
 *
 * Two names, kept few on purpose: roles already say *what* in an organization a principal may
 * do; scopes say *through which door* a token (often held by an MCP client) may do it.
 */
export const TOKEN_SCOPES = { mcpTools: 'mcp:tools', api: 'api' } as const;

/** What an agent's MCP endpoint offers clients to ask for (RFC 9728 `scopes_supported`). */
export const MCP_SCOPES_SUPPORTED = [TOKEN_SCOPES.mcpTools];

/** The route of an agent's MCP endpoint (src/mcp/mcp.controller.ts), as Fastify names it. */
export const MCP_ENDPOINT_ROUTE = '/api/v1/agents/:agentId/mcp';

/**
 * What an MCP client may send without `mcp:tools`: discovery, and notifications (a stateless
 * endpoint's notification reaches nothing but its own request). Any other method needs the scope,
 * so a method added later (the Tasks extension's `tasks/result`, `tasks/cancel`, …) fails closed:
 * `tasks/get` handed a held call's result to a token that could not have made the call.
 */
const FREE_MCP_METHODS = new Set(['initialize', 'server/discover', 'ping', 'tools/list']);

/** The scope a request lacks, or undefined when the token's scopes (if any) allow it. */
export function missingScope(principal: Principal, route: string | undefined, body: unknown): string | undefined {
  if (principal.type !== 'oidc' || principal.tokenScopes === undefined) return undefined;
  const granted = new Set(principal.tokenScopes);
  if (route === MCP_ENDPOINT_ROUTE) {
    return usesTools(body) && !granted.has(TOKEN_SCOPES.mcpTools) ? TOKEN_SCOPES.mcpTools : undefined;
  }
  return granted.has(TOKEN_SCOPES.api) ? undefined : TOKEN_SCOPES.api;
}

/** A JSON-RPC message (or a batch, which the endpoint refuses anyway) asking for more than FREE_MCP_METHODS. */
function usesTools(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const method = typeof m === 'object' && m !== null ? (m as { method?: unknown }).method : undefined;
    // Not a string: no request the endpoint will serve (it answers -32600), and nothing to hand over.
    return typeof method === 'string' && !FREE_MCP_METHODS.has(method) && !method.startsWith('notifications/');
  });
}
