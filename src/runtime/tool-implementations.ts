import { Injectable } from '@nestjs/common';
import type { BuiltVersion, VersionTool } from '../agents/built-version';
import { Applicability, VersionBuilder } from '../agents/version-builder.service';
import type { AgentIdentity } from '../agents/version-store.service';
import type { StampedContribution, ToolContext, ToolDeclaration } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { findUnstorableValue } from '../common/nul-character';
import { CapabilityToolResolver } from './capability-tool.resolver';
import { McpToolResolver } from './mcp-tool.resolver';

/** What runs: the shape runTool accepts. Exists only inside src/runtime/. */
export interface ToolImplementation {
  declaration: Pick<ToolDeclaration, 'maxOutputTokens' | 'offloadLargeResults'>;
  execute(args: unknown, ctx: ToolContext): unknown;
}

/** A version built for running: the data everyone sees, and what a resolver may use to find code. */
export interface RunnableVersion {
  built: BuiltVersion;
  /** What each capability contributed during this very build, by capability id. */
  contributions: ReadonlyMap<string, StampedContribution>;
}

/** Validated arguments: `value` is handed to the implementation; `plain` is hashed, stored and approved. */
export interface ValidatedArguments {
  value: object;
  plain: Record<string, unknown>;
  /** At most MAX_REPORTED_ERRORS (common/bounded-transform.ts). */
  errors: FieldError[];
  /** Problems found beyond `errors`. */
  omitted?: number;
}

/**
 * One source of tools (the capabilities of this code base; later a vendor's MCP server). It says
 * how its tools' arguments are validated and what runs them. Nothing outside src/runtime/
 * implements or calls one.
 */
export interface ToolImplementationResolver {
  handles(tool: VersionTool): boolean;
  /** `orgId`: whose call it is, for a resolver whose checks take turns by organization (the MCP one). */
  validate(tool: VersionTool, args: unknown, orgId: string): ValidatedArguments | Promise<ValidatedArguments>;
  resolve(tool: VersionTool, version: RunnableVersion): ToolImplementation | undefined | Promise<ToolImplementation | undefined>;
}

/**
 * Sealed execution (DESIGN.md idea 8): the executor, and only it, turns an offered tool (data)
 * into code that runs. It asks this class, which asks the resolver of the tool's source.
 *
 * The seam for a new tool source: write its resolver in src/runtime/ (for MCP catalog tools,
 * `capabilityId: "mcp"`, toolId `<connection>/<tool>`: one whose `handles` picks those, whose
 * `validate` checks the arguments against the listed schema, and whose `resolve` hands back the
 * pooled client's call), inject it here and put it before the capability resolver. The version
 * composer only ever offers it as data; every guard, the approval gate, the output budget and the
 * audit stay the executor's, so a new source cannot skip them.
 */
@Injectable()
export class ToolImplementations {
  private readonly resolvers: readonly ToolImplementationResolver[];

  constructor(
    private readonly versions: VersionBuilder,
    capabilities: CapabilityToolResolver,
    mcp: McpToolResolver,
  ) {
    this.resolvers = [mcp, capabilities];
  }

  /** Builds a published version for running (404 not_found, 409 not_published as VersionBuilder). */
  async build(
    orgId: string,
    orgScopes: readonly string[],
    agentId: string,
    version: number | 'latest',
    applicability?: Applicability,
    /** The agent as the request already read it with the key (AgentSnapshot). */
    agent?: { agent: AgentIdentity | null },
  ): Promise<RunnableVersion> {
    const contributions = new Map<string, StampedContribution>();
    // A call is about to run: MCP tool lists past MCP_TOOLS_TTL_SECONDS are listed again, so a
    // server that changed a tool is caught (drift, 409) before it runs.
    const built = await this.versions.build(orgId, orgScopes, agentId, version, (c) => contributions.set(c.capabilityId, c), {
      applicability,
      refreshMcpTools: true,
      agent,
    });
    return { built, contributions };
  }

  async validate(tool: VersionTool, args: unknown, orgId: string): Promise<ValidatedArguments> {
    // REST and MCP bodies are refused at parse for these; a model's arguments in a run are not a
    // body, and a tool's schema says nothing of them (Ajv takes Infinity for a number). Neither can
    // be stored, hashed or sent on, whatever the source of the tool.
    const unfit = findUnstorableValue(args);
    if (unfit) return { value: {}, plain: {}, errors: [unfit] };
    return this.resolverOf(tool).validate(tool, args, orgId);
  }

  async resolve(tool: VersionTool, version: RunnableVersion): Promise<ToolImplementation | undefined> {
    return this.resolverOf(tool).resolve(tool, version);
  }

  private resolverOf(tool: VersionTool): ToolImplementationResolver {
    const resolver = this.resolvers.find((r) => r.handles(tool));
    // The composer offers only tools of known sources; reaching here is a bug, not a refusal.
    if (!resolver) throw new Error(`invariant: no implementation resolver handles ${tool.capabilityId}/${tool.toolId}`);
    return resolver;
  }
}
