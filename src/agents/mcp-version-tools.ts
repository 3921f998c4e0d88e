import { LruCache } from '../common/lru-cache';
import type { BoundConnection } from '../mcp-catalog/connections/mcp-connection-sync.service';
import { approvalReasonOf } from '../runtime/tool-policy';
import type { AgentSpec, VersionTool } from './built-version';
import { legacyMcpToolDigest, mcpToolDigest, ownEntry } from './digests';

/** The `capabilityId` every MCP catalog tool is offered under (API.md). */
export const MCP_CAPABILITY_ID = 'mcp';

/**
 * MCP results are whatever a vendor's server answers: cut past this many tokens, the whole kept
 * apart (`resultRef`), so an image or an embedded resource never floods a model's context.
 */
export const MCP_MAX_OUTPUT_TOKENS = 16_000;

/** `<connection name>/<tool name>`: the key of an MCP tool in toolApproval and toolOverrides. */
export function mcpToolKey(connectionName: string, toolName: string): string {
  return `${connectionName}/${toolName}`;
}

/** The server's own name of an MCP tool, from its key (connection names hold no `/`). */
export function mcpToolName(toolId: string): string {
  return toolId.slice(toolId.indexOf('/') + 1);
}

/**
 * Where a tool's calls go, as a version pins it beside its digest (`agent_version.tool_sources`):
 * an MCP tool's connection (by id: a renamed connection is the same source) and the server's name
 * of the tool; a built-in's capability and tool id. A name whose tool now comes from another
 * source is drift `removed` plus `added`, not `changed`.
 */
export function sourceOf(tool: Pick<VersionTool, 'capabilityId' | 'toolId' | 'source'>): string {
  return tool.source ? `${MCP_CAPABILITY_ID}/${tool.source.connectionId}/${mcpToolName(tool.toolId)}` : `${tool.capabilityId}/${tool.toolId}`;
}

/** What a version's bound connections contribute (composeMcpTools). Never changed once made: builds share it (McpCompositions). */
export interface McpComposition {
  tools: readonly VersionTool[];
  contributors: readonly { capabilityId: string; scopes: readonly string[] }[];
  legacy: ReadonlyMap<VersionTool, string>;
  /** The names of `tools`, and whether each is offered once among them: what oneToolPerName needs to know of them. */
  names: ReadonlySet<string>;
}

/**
 * What the MCP compositions a node keeps (McpCompositions) may hold alive together, about, in
 * bytes: each weighs its lists (their JSON's characters, twice: the tools it keeps hold the lists'
 * strings and schemas, even once the lists' own cache has let them go) and its tools (a few hundred
 * bytes each). Six versions at row 101's bound (4 MiB of lists, 10,000 tools), or thousands of usual ones.
 */
export const MCP_COMPOSED_BYTES = 64 * 1024 * 1024;
const BYTES_PER_COMPOSED_TOOL = 400;

/**
 * The MCP part of each published version's last build, kept while the lists it was made of are the
 * ones bound: a build composed every tool of every bound list again, 10,000 for an agent at row
 * 101's bound, and a call of such an agent took 34 ms of a quiet node's CPU, 280 to 500 ms on a
 * busy one (attack round 12, J-F2). A version's spec and pins never change, and a connection's
 * tools are the same array while its list, trust and risk overrides are (McpConnectionSync.bound),
 * so what it was made of is known by identity: a renamed connection, a list listed again, a
 * changed override or a catalog entry gone is a miss, composed again. Kept by the version's key,
 * not its cached row (which the versions' own cache must be free to let go), within MCP_COMPOSED_BYTES.
 */
export class McpCompositions {
  private readonly kept = new LruCache<string, { from: readonly BoundConnection[]; composed: McpComposition }>(10_000, {
    max: MCP_COMPOSED_BYTES,
    of: (k) => k.from.reduce((chars, c) => chars + 2 * c.chars, 0) + BYTES_PER_COMPOSED_TOOL * (k.composed.tools.length + 1),
  });

  /** `version`: `<org>/<agent>/<number>` of a published version, whose spec and pins never change. */
  of(version: string, spec: AgentSpec, pinned: Record<string, string>, connections: readonly BoundConnection[]): McpComposition {
    const known = this.kept.get(version);
    if (known && sameConnections(known.from, connections)) return known.composed;
    const composed = frozen(composeMcpTools(spec, pinned, connections));
    this.kept.set(version, { from: connections, composed });
    return composed;
  }
}

function sameConnections(a: readonly BoundConnection[], b: readonly BoundConnection[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (c, i) =>
        c.id === b[i].id &&
        c.name === b[i].name &&
        c.server === b[i].server &&
        c.entry === b[i].entry &&
        c.tools === b[i].tools &&
        c.overBound === b[i].overBound,
    )
  );
}

/**
 * Each tool frozen (the schemas are the lists' own, frozen already): a build that changed a shared
 * tool would change every later one. The array is readonly by type only: V8 walks a frozen array
 * of 10,000 (the executor's lookup by name) on a path many times slower.
 */
function frozen(c: McpComposition): McpComposition {
  for (const tool of c.tools) Object.freeze(Object.freeze(tool).declaration);
  return Object.freeze({ tools: c.tools, contributors: Object.freeze(c.contributors), legacy: c.legacy, names: c.names });
}

/**
 * The tools a spec's bound connections offer, as data (sealed execution: the executor's MCP
 * resolver runs them). A connection that no longer exists, or whose catalog entry the code no
 * longer has, offers nothing: its pinned tools show as drift and are refused. `legacy`: the tools
 * that match their pin only in the format of before pins named the connection, with their digest
 * in today's (see oneToolPerName).
 */
export function composeMcpTools(spec: AgentSpec, pinned: Record<string, string>, connections: readonly BoundConnection[]): McpComposition {
  const byId = new Map(connections.map((c) => [c.id, c]));
  const tools: VersionTool[] = [];
  const legacy = new Map<VersionTool, string>();
  const contributors: { capabilityId: string; scopes: readonly string[] }[] = [];
  for (const binding of spec.mcpServers ?? []) {
    const connection = byId.get(binding.connection);
    if (!connection?.entry) continue;
    const scopes = connection.entry.definition.scopes;
    contributors.push({ capabilityId: `${MCP_CAPABILITY_ID}:${connection.name}`, scopes });
    const allowed = binding.tools ? new Set(binding.tools) : undefined;
    for (const listed of connection.tools) {
      if (allowed && !allowed.has(listed.name)) continue;
      const toolId = mcpToolKey(connection.name, listed.name);
      const override = ownEntry(spec.toolOverrides, toolId) ?? {};
      const approvalReason = approvalReasonOf({ risk: listed.risk, toolId }, spec.toolApproval);
      const facts = {
        name: override.name ?? listed.name,
        description: override.description ?? listed.description,
        inputSchema: listed.inputSchema,
        annotations: listed.annotations ?? {},
        risk: listed.risk,
        requiresApproval: approvalReason !== null,
        connectionId: connection.id,
        toolId,
      };
      // Everything a digest depends on besides the list itself, which the memo belongs to.
      const key = [listed.name, toolId, facts.name, override.description ?? null, facts.risk, facts.requiresApproval];
      const digest = memoized(connection, JSON.stringify(key), () => mcpToolDigest(facts));
      const pinnedDigest = ownEntry(pinned, facts.name);
      // Only when today's digest differs, and once per list: a version pinned in the older format.
      const legacyMatch =
        pinnedDigest !== undefined &&
        pinnedDigest !== digest &&
        pinnedDigest === memoized(connection, JSON.stringify(['legacy', ...key]), () => legacyMcpToolDigest(facts));
      const tool: VersionTool = {
        name: facts.name,
        description: facts.description,
        inputSchema: facts.inputSchema,
        capabilityId: MCP_CAPABILITY_ID,
        toolId,
        risk: facts.risk,
        requiresApproval: facts.requiresApproval,
        source: { connectionId: connection.id, server: connection.server },
        declaration: { id: toolId, description: facts.description, risk: facts.risk, maxOutputTokens: MCP_MAX_OUTPUT_TOKENS, offloadLargeResults: true },
        scopes,
        approvalReason,
        digest: legacyMatch ? pinnedDigest : digest,
        pinnedDigest,
      };
      tools.push(tool);
      if (legacyMatch) legacy.set(tool, digest);
    }
  }
  return { tools, contributors, legacy, names: new Set(tools.map((t) => t.name)) };
}

/**
 * `tools` (a build's own, few) then the MCP tools, each name once (oneToolPerName). Without a clash,
 * which is nearly always, nothing is walked but `tools`: a map of the names of 10,000 MCP tools
 * built on every call was a third of a call of an agent binding that many (J-F2).
 */
export function offerOnce(
  tools: readonly VersionTool[],
  mcp: McpComposition,
  pinnedSources: Readonly<Record<string, string>> | null,
): { tools: readonly VersionTool[]; shadowed: VersionTool[] } {
  const own = new Set(tools.map((t) => t.name));
  const clash = mcp.names.size < mcp.tools.length || own.size < tools.length || tools.some((t) => mcp.names.has(t.name));
  if (clash) return oneToolPerName(tools.concat(mcp.tools), mcp.legacy, pinnedSources);
  // An agent of MCP servers only: their tools as composed (frozen), not a copy a call.
  return { tools: tools.length === 0 ? mcp.tools : tools.concat(mcp.tools), shadowed: [] };
}

/**
 * A version offers each name once (publish refuses `duplicate_tool_name`), but a bound connection
 * may later list a tool under a name the version already offers, even an exact copy of another
 * connection's pinned tool. The name stays with the tool the version pinned: its digest names its
 * connection, so a copy elsewhere never matches. With no such tool, the one from the pinned source
 * keeps it (its definition changed), else the first in offer order; neither can run. The others are not offered (`shadowed`: drift, never called).
 * A pin of the older format cannot tell the copies apart, so none of them matches it then.
 */
export function oneToolPerName(
  tools: VersionTool[],
  legacy: ReadonlyMap<VersionTool, string>,
  pinnedSources: Readonly<Record<string, string>> | null = null,
): { tools: VersionTool[]; shadowed: VersionTool[] } {
  const byName = new Map<string, VersionTool[]>();
  for (const tool of tools) {
    const same = byName.get(tool.name);
    if (same) same.push(tool);
    else byName.set(tool.name, [tool]);
  }
  if (byName.size === tools.length) return { tools, shadowed: [] };
  // Copies with today's digest: the tools may be shared by other builds (McpCompositions), which may not share the clash.
  const today = new Map<VersionTool, VersionTool>();
  for (const same of byName.values()) {
    if (same.length < 2) continue;
    for (const [i, tool] of same.entries()) {
      const digest = legacy.get(tool);
      if (digest === undefined) continue;
      same[i] = { ...tool, digest };
      today.set(tool, same[i]);
    }
  }
  const kept = new Set<VersionTool>();
  for (const same of byName.values()) {
    const source = pinnedSources && ownEntry(pinnedSources, same[0].name);
    kept.add(
      same.find((t) => t.pinnedDigest !== undefined && t.digest === t.pinnedDigest) ??
        (source === undefined || source === null ? undefined : same.find((t) => sourceOf(t) === source)) ??
        same[0],
    );
  }
  const all = tools.map((t) => today.get(t) ?? t);
  return { tools: all.filter((t) => kept.has(t)), shadowed: all.filter((t) => !kept.has(t)) };
}

/**
 * A tool's digest, from the connection's list's memo when this list was composed so before: the
 * canonical JSON and SHA-256 of every listed tool on every call cost more than the call (a list of
 * 500 tools at the 4 MiB cap).
 */
function memoized(connection: BoundConnection, key: string, digest: () => string): string {
  const known = connection.digests.get(key);
  if (known !== undefined) return known;
  const made = digest();
  connection.digests.set(key, made);
  return made;
}
