import { Inject, Injectable } from '@nestjs/common';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { VersionTool } from '../agents/built-version';
import { MCP_CAPABILITY_ID, mcpToolName } from '../agents/mcp-version-tools';
import { ToolError } from '../capabilities/capability.types';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { McpClientPool, McpUpstreamError } from '../mcp-catalog/connections/mcp-client-pool.service';
import { McpConnectionSync } from '../mcp-catalog/connections/mcp-connection-sync.service';
import { SecretOpenError } from '../secrets/secrets.service';
import type { ToolImplementation, ToolImplementationResolver, ValidatedArguments } from './tool-implementations';
import { VendorSchemaChecks } from './vendor-schema-checks';

const MAX_ERROR_TEXT = 2000;
const SECRET_UNREADABLE =
  "The platform cannot open this MCP connection's stored credentials or URL (sealed under a secrets key this server does not hold); nothing was sent to the MCP server. The operator has been told.";

/**
 * Tools of MCP catalog connections (`capabilityId: "mcp"`): arguments validated against the input
 * schema the server listed (the one pinned in the version's digest), and run by the connection's
 * pooled MCP client. The server's answer is the result, `{ content, structuredContent? }`;
 * `isError` is a failed call (`tool_error`), an unreachable server `upstream_unavailable`, a
 * refused address `egress_refused`, no answer in time `timeout`, stored secrets this node cannot
 * open `secret_unreadable`. Like every resolver, reached only
 * by the executor, after every guard.
 */
@Injectable()
export class McpToolResolver implements ToolImplementationResolver {
  constructor(
    private readonly checks: VendorSchemaChecks,
    private readonly connections: McpConnectionSync,
    private readonly pool: McpClientPool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  handles(tool: VersionTool): boolean {
    return tool.capabilityId === MCP_CAPABILITY_ID && tool.source !== undefined;
  }

  async validate(tool: VersionTool, args: unknown, orgId: string): Promise<ValidatedArguments> {
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return { value: {}, plain: {}, errors: [{ path: '', code: 'type', message: 'must be an object' }] };
    }
    const plain = args as Record<string, unknown>;
    const found = await this.checks.check(orgId, tool.digest, tool.inputSchema, plain);
    // A schema the platform cannot use validates nothing: refuse rather than pass anything through.
    if ('unusable' in found) {
      return { value: plain, plain, errors: [{ path: '', code: 'schema', message: `the server's input schema cannot be used: ${found.unusable}` }] };
    }
    return found.omitted > 0 ? { value: plain, plain, errors: found.errors, omitted: found.omitted } : { value: plain, plain, errors: found.errors };
  }

  resolve(tool: VersionTool): ToolImplementation {
    const source = tool.source!;
    const name = mcpToolName(tool.toolId);
    return {
      declaration: tool.declaration,
      execute: async (args, ctx) => {
        let result: CallToolResult;
        try {
          const target = await this.connections.target(ctx.orgId, source.connectionId);
          result = await this.pool.callTool(target, name, args as Record<string, unknown>, { signal: ctx.signal, timeoutMs: this.config.toolTimeoutMs });
        } catch (err) {
          if (err instanceof McpUpstreamError) throw new ToolError(err.code, err.message);
          // Logged for the operator where it was opened; the caller learns it is no outage of the server.
          if (err instanceof SecretOpenError) throw new ToolError('secret_unreadable', SECRET_UNREADABLE);
          throw err;
        }
        if (result.isError === true) throw new ToolError('tool_error', errorText(result));
        return result.structuredContent !== undefined
          ? { content: result.content ?? [], structuredContent: result.structuredContent }
          : { content: result.content ?? [] };
      },
    };
  }
}

/** The text the server gave with its error, for the model to act on. */
function errorText(result: CallToolResult): string {
  const text = (result.content ?? [])
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text' && typeof (c as { text?: unknown }).text === 'string')
    .map((c) => c.text)
    .join('\n')
    .slice(0, MAX_ERROR_TEXT);
  return text !== '' ? text : 'The MCP server reported an error.';
}
