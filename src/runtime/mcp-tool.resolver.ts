import { Inject, Injectable } from '@nestjs/common';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { ErrorObject } from 'ajv';
import type { VersionTool } from '../agents/built-version';
import { MCP_CAPABILITY_ID, mcpToolName } from '../agents/mcp-version-tools';
import { ToolError } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { McpClientPool, McpUpstreamError } from '../mcp-catalog/connections/mcp-client-pool.service';
import { McpConnectionSync } from '../mcp-catalog/connections/mcp-connection-sync.service';
import { SecretOpenError } from '../secrets/secrets.service';
import type { ToolImplementation, ToolImplementationResolver, ValidatedArguments } from './tool-implementations';
import { compileVendorSchema, VendorValidator } from './vendor-schema';

/** Compiled argument validators kept per process, by tool digest (a changed schema is a new digest). */
const VALIDATORS_CACHED = 2000;
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
  private readonly validators = new LruCache<string, VendorValidator | string>(VALIDATORS_CACHED);

  constructor(
    private readonly connections: McpConnectionSync,
    private readonly pool: McpClientPool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  handles(tool: VersionTool): boolean {
    return tool.capabilityId === MCP_CAPABILITY_ID && tool.source !== undefined;
  }

  validate(tool: VersionTool, args: unknown): ValidatedArguments {
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return { value: {}, plain: {}, errors: [{ path: '', code: 'type', message: 'must be an object' }] };
    }
    const plain = args as Record<string, unknown>;
    const validator = this.validatorOf(tool);
    // A schema the platform cannot use validates nothing: refuse rather than pass anything through.
    const found = typeof validator === 'string' ? validator : validator(plain);
    if (typeof found === 'string') {
      return { value: plain, plain, errors: [{ path: '', code: 'schema', message: `the server's input schema cannot be used: ${found}` }] };
    }
    return { value: plain, plain, errors: found.map(toFieldError) };
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

  private validatorOf(tool: VersionTool): VendorValidator | string {
    const known = this.validators.get(tool.digest);
    if (known !== undefined) return known;
    const compiled = compileVendorSchema(tool.inputSchema);
    this.validators.set(tool.digest, compiled);
    return compiled;
  }
}

/** Ajv's instance path (`/items/0/name`) as the API's (`items[0].name`). */
function toFieldError(e: ErrorObject): FieldError {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty?: string }).missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty?: string }).additionalProperty));
  const path = parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
  return { path, code: e.keyword, message: `${path || 'arguments'} ${e.message ?? 'is invalid'}` };
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
