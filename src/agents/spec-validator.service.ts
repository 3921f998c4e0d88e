import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { modelProviderExists } from '../runs/model-providers.repository';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import { ResolvedResources, TOOL_NAME_PATTERN } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { missingScopes } from '../runtime/tool-policy';
import type { AgentSpec } from './built-version';
import { VersionBuilder } from './version-builder.service';
import { BoundConnection, McpConnectionSync } from '../mcp-catalog/connections/mcp-connection-sync.service';
import { mcpToolKey } from './mcp-version-tools';
import { BOUND_LISTS_MAX_BYTES } from '../mcp-catalog/connections/mcp-tools';

export type SpecErrorCode =
  | 'unknown_capability'
  | 'duplicate_capability'
  | 'invalid_config'
  | 'scope_not_granted'
  | 'unknown_tool'
  | 'invalid_tool_name'
  | 'duplicate_tool_name'
  | 'unknown_resource'
  | 'duplicate_resource'
  | 'tool_lists_too_large';

export interface SpecError extends FieldError {
  code: SpecErrorCode;
}

export interface SpecValidation {
  errors: SpecError[];
  /** Problems found beyond `errors` (a config's list is bounded where it is checked). */
  omitted: number;
  /** Every capability's config with its defaults filled in; only meaningful when `errors` is empty. */
  normalized: AgentSpec;
  resources: ResolvedResources;
  /** The bound MCP connections as listed now: what publish pins. */
  mcpConnections: BoundConnection[];
}

/**
 * Judges a draft against the code (the capability registry) and the organization (its scopes and
 * resources). Every problem is reported, each at its path, so a form can mark them all at once.
 */
@Injectable()
export class SpecValidator {
  constructor(
    private readonly registry: CapabilityRegistry,
    private readonly builder: VersionBuilder,
    private readonly dataSource: DataSource,
    private readonly mcp: McpConnectionSync,
  ) {}

  async validate(orgId: string, orgScopes: readonly string[], draft: AgentSpec): Promise<SpecValidation> {
    const errors: SpecError[] = [];
    const granted = new Set(orgScopes);
    const capabilities: AgentSpec['capabilities'] = [];
    // Tool id -> its capability, for the tools of every attached (known) capability.
    const tools = new Map<string, string>();
    const firstIndex = new Map<string, number>();
    let omitted = 0;

    draft.capabilities.forEach((ref, i) => {
      const at = `capabilities[${i}]`;
      if (firstIndex.has(ref.id)) {
        errors.push({
          path: `${at}.id`,
          code: 'duplicate_capability',
          message: `capability "${ref.id}" is already listed at capabilities[${firstIndex.get(ref.id)}]`,
        });
        return;
      }
      firstIndex.set(ref.id, i);
      const registered = this.registry.get(ref.id);
      if (!registered) {
        errors.push({ path: `${at}.id`, code: 'unknown_capability', message: `no capability has the id "${ref.id}"` });
        return;
      }
      const config = this.registry.validateConfig(ref.id, ref.config);
      for (const e of config.errors) {
        errors.push({ path: configPath(at, e.path), code: 'invalid_config', message: e.message });
      }
      omitted += config.omitted ?? 0;
      const missing = missingScopes(registered.definition.scopes ?? [], granted);
      if (missing.length > 0) {
        errors.push({
          path: at,
          code: 'scope_not_granted',
          message: `the organization lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')} that "${ref.id}" needs`,
        });
      }
      for (const t of registered.tools) tools.set(t.declaration.id, ref.id);
      capabilities.push({ id: ref.id, config: config.value });
    });

    // MCP tools join the same maps: keyed `<connection>/<tool>`, offered under the tool's name.
    const defaultName = new Map<string, { name: string; binding: number }>();
    const mcpConnections = await this.checkMcpServers(orgId, granted, draft, errors, tools, defaultName);

    for (const key of Object.keys(draft.toolApproval ?? {})) {
      if (!tools.has(key))
        errors.push({
          path: `toolApproval.${key}`,
          code: 'unknown_tool',
          message: `"${key}" is not a tool of an attached capability or a bound MCP connection`,
        });
    }
    const overrides = draft.toolOverrides ?? {};
    // A Map, looked up once or twice for each of up to 10,000 tools: a key made by concatenation
    // looked up as an object's own property was interned first, each time (1 to 3 ms a check).
    const renamed = new Map(Object.entries(overrides).flatMap(([key, o]) => (o.name === undefined ? [] : [[key, o.name] as const])));
    // The name each tool is offered under, to find collisions; invalid names are reported once, as invalid.
    const offeredBy = new Map<string, string[]>();
    for (const toolId of tools.keys()) {
      const name = renamed.size === 0 ? undefined : renamed.get(toolId);
      const offered = name !== undefined && TOOL_NAME_PATTERN.test(name) ? name : (defaultName.get(toolId)?.name ?? toolId);
      const sharing = offeredBy.get(offered);
      if (sharing) sharing.push(toolId);
      else offeredBy.set(offered, [toolId]);
    }
    this.checkMcpToolNames(renamed, offeredBy, defaultName, errors);
    for (const [key, override] of Object.entries(overrides)) {
      if (!tools.has(key)) {
        errors.push({
          path: `toolOverrides.${key}`,
          code: 'unknown_tool',
          message: `"${key}" is not a tool of an attached capability or a bound MCP connection`,
        });
        continue;
      }
      if (override.name === undefined) continue;
      if (!TOOL_NAME_PATTERN.test(override.name)) {
        errors.push({
          path: `toolOverrides.${key}.name`,
          code: 'invalid_tool_name',
          message: `"${override.name}" is not a name a model accepts (${TOOL_NAME_PATTERN.source})`,
        });
        continue;
      }
      const sharing = (offeredBy.get(override.name) ?? []).filter((id) => id !== key);
      if (sharing.length > 0) {
        errors.push({
          path: `toolOverrides.${key}.name`,
          code: 'duplicate_tool_name',
          message: `"${override.name}" would also be the name of ${sharing.map((s) => `"${s}"`).join(', ')}`,
        });
      }
    }

    const resources = await this.builder.resolveResources(orgId, draft);
    const known = {
      knowledgeCollections: new Set(resources.knowledgeCollections.map((r) => r.id)),
      skills: new Set(resources.skills.map((r) => r.id)),
    };
    for (const kind of ['knowledgeCollections', 'skills'] as const) {
      const seen = new Map<string, number>();
      (draft.resources?.[kind] ?? []).forEach((id, i) => {
        // Drafts saved before ids were lowercased on the way in may still hold one id twice.
        const first = seen.get(id.toLowerCase());
        if (first !== undefined) {
          errors.push({ path: `resources.${kind}[${i}]`, code: 'duplicate_resource', message: `"${id}" is already listed at resources.${kind}[${first}]` });
          return;
        }
        seen.set(id.toLowerCase(), i);
        if (!known[kind].has(id)) {
          errors.push({
            path: `resources.${kind}[${i}]`,
            code: 'unknown_resource',
            message: `no ${kind === 'skills' ? 'skill' : 'knowledge collection'} "${id}" in this organization`,
          });
        }
      });
    }

    if (draft.model && !(await modelProviderExists(this.dataSource, orgId, draft.model.provider))) {
      errors.push({ path: 'model.provider', code: 'unknown_resource', message: `no model provider "${draft.model.provider}" in this organization` });
    }

    const normalized: AgentSpec = {
      instructions: draft.instructions,
      capabilities,
      resources: { knowledgeCollections: [...(draft.resources?.knowledgeCollections ?? [])], skills: [...(draft.resources?.skills ?? [])] },
      toolApproval: { ...(draft.toolApproval ?? {}) },
      toolOverrides: Object.fromEntries(Object.entries(overrides).map(([k, o]) => [k, { ...o }])),
      ...(draft.model ? { model: { ...draft.model } } : {}),
    };
    if (draft.mcpServers !== undefined)
      normalized.mcpServers = draft.mcpServers.map((b) =>
        b.tools === undefined ? { connection: b.connection } : { connection: b.connection, tools: [...b.tools] },
      );
    return { errors, omitted, normalized, resources, mcpConnections };
  }

  /**
   * `mcpServers`: each connection exists in the organization (once), its catalog entry still
   * exists and its scopes are granted, and every allow-listed tool is one it lists. Fills `tools`
   * (key -> source) and `defaultName` (key -> the name it is offered under without an override).
   */
  private async checkMcpServers(
    orgId: string,
    granted: ReadonlySet<string>,
    draft: AgentSpec,
    errors: SpecError[],
    tools: Map<string, string>,
    defaultName: Map<string, { name: string; binding: number }>,
  ): Promise<BoundConnection[]> {
    const bindings = draft.mcpServers ?? [];
    if (bindings.length === 0) return [];
    const found = await this.mcp.bound(orgId, [...new Set(bindings.map((b) => b.connection))], { refreshStale: false });
    const byId = new Map(found.map((c) => [c.id, c]));
    const seen = new Map<string, number>();
    bindings.forEach((binding, i) => {
      const at = `mcpServers[${i}]`;
      if (seen.has(binding.connection)) {
        errors.push({
          path: `${at}.connection`,
          code: 'duplicate_resource',
          message: `connection "${binding.connection}" is already bound at mcpServers[${seen.get(binding.connection)}]`,
        });
        return;
      }
      seen.set(binding.connection, i);
      const connection = byId.get(binding.connection);
      if (!connection) {
        errors.push({ path: `${at}.connection`, code: 'unknown_resource', message: `no MCP connection "${binding.connection}" in this organization` });
        return;
      }
      if (!connection.entry) {
        errors.push({
          path: `${at}.connection`,
          code: 'unknown_resource',
          message: `the catalog no longer has the "${connection.server}" server of connection "${connection.name}"`,
        });
        return;
      }
      if (connection.overBound) {
        errors.push({
          path: `${at}.connection`,
          code: 'tool_lists_too_large',
          message: `the tool lists of the connections bound up to connection "${connection.name}" weigh more than ${BOUND_LISTS_MAX_BYTES} bytes together, the most one version may bind; bind fewer or smaller connections`,
        });
        return;
      }
      const missing = missingScopes(connection.entry.definition.scopes, granted);
      if (missing.length > 0) {
        errors.push({
          path: at,
          code: 'scope_not_granted',
          message: `the organization lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')} that the "${connection.server}" server needs`,
        });
      }
      const listed = new Set(connection.tools.map((t) => t.name));
      (binding.tools ?? []).forEach((name, j) => {
        if (!listed.has(name))
          errors.push({
            path: `${at}.tools[${j}]`,
            code: 'unknown_tool',
            message: `connection "${connection.name}" lists no tool "${name}" (sync it if the server added one)`,
          });
      });
      const allowed = binding.tools ? new Set(binding.tools) : undefined;
      const source = `mcp:${connection.name}`;
      for (const tool of connection.tools) {
        if (allowed && !allowed.has(tool.name)) continue;
        const key = mcpToolKey(connection.name, tool.name);
        tools.set(key, source);
        defaultName.set(key, { name: tool.name, binding: i });
      }
    });
    return found;
  }

  /**
   * An MCP tool is offered under its server's name unless overridden: that name must be one a model
   * accepts and must not collide with another offered tool. Reported at its binding, since no
   * override names it (collisions through an override are reported at the override).
   */
  private checkMcpToolNames(
    renamed: ReadonlyMap<string, string>,
    offeredBy: Map<string, string[]>,
    defaultName: Map<string, { name: string; binding: number }>,
    errors: SpecError[],
  ): void {
    for (const [key, { name, binding }] of defaultName) {
      if (renamed.size > 0 && renamed.has(key)) continue;
      if (!TOOL_NAME_PATTERN.test(name)) {
        errors.push({
          path: `mcpServers[${binding}]`,
          code: 'invalid_tool_name',
          message: `the server's tool "${name}" has a name a model does not accept (${TOOL_NAME_PATTERN.source}); rename it in toolOverrides["${key}"].name or leave it out of tools`,
        });
        continue;
      }
      // A collision made by an override is reported at that override; here only the ones no override made.
      const holders = offeredBy.get(name) ?? [];
      if (holders.length < 2) continue;
      const sharing = holders.filter((k) => k !== key && !renamed.has(k));
      if (sharing.length > 0) {
        errors.push({
          path: `mcpServers[${binding}]`,
          code: 'duplicate_tool_name',
          message: `"${name}" (${key}) would also be the name of ${sharing.map((s) => `"${s}"`).join(', ')}; rename one in toolOverrides`,
        });
      }
    }
  }
}

/** Config error paths are relative to the config object: `units` -> `capabilities[0].config.units`. */
function configPath(capabilityPath: string, relative: string): string {
  const base = `${capabilityPath}.config`;
  if (relative === '') return base;
  return relative.startsWith('[') ? `${base}${relative}` : `${base}.${relative}`;
}
