import type { BoundConnection } from '../mcp-catalog/connections/mcp-connections.service';
import { approvalReasonOf } from '../runtime/tool-policy';
import type { AgentSpec, VersionTool } from './built-version';
import { McpToolDefinitionFacts, mcpToolDigest, ownEntry } from './digests';

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
 * The tools a spec's bound connections offer, as data (sealed execution: the executor's MCP
 * resolver runs them). A connection that no longer exists, or whose catalog entry the code no
 * longer has, offers nothing: its pinned tools show as drift and are refused.
 */
export function composeMcpTools(
  spec: AgentSpec,
  pinned: Record<string, string>,
  connections: readonly BoundConnection[],
): { tools: VersionTool[]; contributors: { capabilityId: string; scopes: readonly string[] }[] } {
  const byId = new Map(connections.map((c) => [c.id, c]));
  const tools: VersionTool[] = [];
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
      };
      tools.push({
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
        digest: digestOf(connection, listed.name, override.description, facts),
        pinnedDigest: ownEntry(pinned, facts.name),
      });
    }
  }
  return { tools, contributors };
}

/**
 * A tool's digest, from the connection's list's memo when this list was composed so before: the
 * canonical JSON and SHA-256 of every listed tool on every call cost more than the call (a list of
 * 500 tools at the 4 MiB cap). The key is everything the digest depends on besides the list itself,
 * which the memo belongs to.
 */
function digestOf(connection: BoundConnection, listedName: string, descriptionOverride: string | undefined, facts: McpToolDefinitionFacts): string {
  const key = JSON.stringify([listedName, facts.name, descriptionOverride ?? null, facts.risk, facts.requiresApproval]);
  const known = connection.digests.get(key);
  if (known !== undefined) return known;
  const digest = mcpToolDigest(facts);
  connection.digests.set(key, digest);
  return digest;
}
