import { Inject, Injectable } from '@nestjs/common';
import type { CallToolResult } from '@modelcontextprotocol/client';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { canonicalize } from 'json-canonicalize';
import { RE2JS } from 're2js';
import type { VersionTool } from '../agents/built-version';
import { MCP_CAPABILITY_ID, mcpToolName } from '../agents/mcp-version-tools';
import { ToolError } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { McpClientPool, McpUpstreamError } from '../mcp-catalog/connections/mcp-client-pool.service';
import { McpConnectionsService } from '../mcp-catalog/connections/mcp-connections.service';
import type { ToolImplementation, ToolImplementationResolver, ValidatedArguments } from './tool-implementations';

/** Compiled argument validators kept per process, by tool digest (a changed schema is a new digest). */
const VALIDATORS_CACHED = 2000;
const MAX_ERROR_TEXT = 2000;

/**
 * Tools of MCP catalog connections (`capabilityId: "mcp"`): arguments validated against the input
 * schema the server listed (the one pinned in the version's digest), and run by the connection's
 * pooled MCP client. The server's answer is the result, `{ content, structuredContent? }`;
 * `isError` is a failed call (`tool_error`), an unreachable server `upstream_unavailable`, a
 * refused address `egress_refused`, no answer in time `timeout`. Like every resolver, reached only
 * by the executor, after every guard.
 */
@Injectable()
export class McpToolResolver implements ToolImplementationResolver {
  private readonly validators = new LruCache<string, ValidateFunction | string>(VALIDATORS_CACHED);

  constructor(
    private readonly connections: McpConnectionsService,
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
    if (typeof validator === 'string') {
      // A schema the platform cannot compile validates nothing: refuse rather than pass anything through.
      return { value: plain, plain, errors: [{ path: '', code: 'schema', message: `the server's input schema cannot be used: ${validator}` }] };
    }
    if (validator(plain)) return { value: plain, plain, errors: [] };
    return { value: plain, plain, errors: (validator.errors ?? []).map(toFieldError) };
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
          throw err;
        }
        if (result.isError === true) throw new ToolError('tool_error', errorText(result));
        return result.structuredContent !== undefined
          ? { content: result.content ?? [], structuredContent: result.structuredContent }
          : { content: result.content ?? [] };
      },
    };
  }

  private validatorOf(tool: VersionTool): ValidateFunction | string {
    const known = this.validators.get(tool.digest);
    if (known !== undefined) return known;
    const { $schema: dialect, ...schema } = tool.inputSchema as { $schema?: unknown };
    // An Ajv of its own per schema: one shared by every tenant registered each schema's `$id` for the
    // life of the process, so another organization's server could take an `$id` (its tools' schemas
    // then failed to compile) or answer a `$ref` (validating this tool against its schema). Dropped
    // with the validator, it also takes Ajv's own cache of the schema with it (about 2 KB, 1.5 ms).
    const options = { strict: false, allErrors: true, validateSchema: false, code: { regExp: linearRegExp } };
    const ajv = typeof dialect === 'string' && /2019-09|2020-12/.test(dialect) ? bounded(new Ajv2020(options)) : bounded(new Ajv(options));
    let compiled: ValidateFunction | string;
    try {
      compiled = ajv.compile(schema);
    } catch (err) {
      compiled = (err as Error).message.slice(0, 300);
    }
    this.validators.set(tool.digest, compiled);
    return compiled;
  }
}

/**
 * Validation runs on the thread that serves every request, against a schema a vendor's server
 * wrote: it must take time linear in the arguments. Two keywords did not. A `pattern` (or a key of
 * `patternProperties`) ran on V8's backtracking engine: `^(a+)+$` held the node 15 s at 31
 * characters, `^(a|a)*$` 5 s at 29, and `\s+$` (in many real schemas) 21 s at 150,000 spaces. Patterns
 * run on RE2 (re2js), which matches in time linear in the text whatever the pattern; one it cannot
 * run (a lookaround, a backreference) makes the schema unusable, like one that does not compile:
 * its tool's calls are refused, naming the pattern, rather than checked less or not at all.
 * `uniqueItems` compared objects pair by pair: 30,000 of them held it 26 s. It is checked here in
 * one pass over each item's canonical JSON (RFC 8785: the key order and 1 vs 1.0 do not matter,
 * as JSON Schema's equality has it).
 */
function bounded<T extends Ajv>(ajv: T): T {
  addFormats(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    schemaType: 'boolean',
    type: 'array',
    errors: false,
    validate: (unique: boolean, data: unknown[]) => !unique || new Set(data.map((item) => canonicalize(item))).size === data.length,
  });
  return ajv;
}

/** Ajv's factory for `pattern` and `patternProperties` (flags: Ajv's `u`, which RE2 always is). */
export const linearRegExp = Object.assign(
  (pattern: string, flags: string): { test: (s: string) => boolean; toString: () => string } => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern), flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (err) {
      const why = (err as Error).message.slice(0, 120);
      throw new Error(`the pattern ${JSON.stringify(pattern.slice(0, 100))} cannot be matched in linear time (${why})`, { cause: err });
    }
    // Ajv shares compiled patterns by this text: the same for every pattern would give all of them the first one.
    return { test: (s: string) => re.test(s), toString: () => `/${pattern}/${flags}` };
  },
  { code: 'new RegExp' },
);

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
