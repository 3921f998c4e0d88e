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

/**
 * The tools a spec's bound connections offer, as data (sealed execution: the executor's MCP
 * resolver runs them). A connection that no longer exists, or whose catalog entry the code no
 * longer has, offers nothing: its pinned tools show as drift and are refused. `legacy`: the tools
 * that match their pin only in the format of before pins named the connection, with their digest
 * in today's (see oneToolPerName).
 */
export function composeMcpTools(
  spec: AgentSpec,
  pinned: Record<string, string>,
  connections: readonly BoundConnection[],
): { tools: VersionTool[]; contributors: { capabilityId: string; scopes: readonly string[] }[]; legacy: Map<VersionTool, string> } {
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
  return { tools, contributors, legacy };
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
  const kept = new Set<VersionTool>();
  for (const same of byName.values()) {
    if (same.length > 1) {
      for (const tool of same) tool.digest = legacy.get(tool) ?? tool.digest;
    }
    const source = pinnedSources && ownEntry(pinnedSources, same[0].name);
    kept.add(
      same.find((t) => t.pinnedDigest !== undefined && t.digest === t.pinnedDigest) ??
        (source === undefined || source === null ? undefined : same.find((t) => sourceOf(t) === source)) ??
        same[0],
    );
  }
  return { tools: tools.filter((t) => kept.has(t)), shadowed: tools.filter((t) => !kept.has(t)) };
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
