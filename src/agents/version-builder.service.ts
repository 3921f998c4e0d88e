import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ResolvedResources } from '../capabilities/capability.types';
import { KnowledgeRepository } from '../knowledge/knowledge.repository';
import { SkillsRepository } from '../skills/skills.repository';
import { BoundConnection, McpConnectionSync } from '../mcp-catalog/connections/mcp-connection-sync.service';
import type { AgentSpec, BuiltVersion } from './built-version';
import { Applicability, Composition, ContributionSink, Contributor, driftOf, DriftEntry, VersionComposer } from './version-composer.service';
import { AgentIdentity, deepFreeze, FrozenVersion, VersionRow, VersionStore } from './version-store.service';

export type { Applicability, Composition, ContributionSink, Contributor, DriftEntry } from './version-composer.service';
export { driftOf } from './version-composer.service';
export { FROZEN_VERSIONS_CACHED } from './version-store.service';
export type { AgentIdentity, VersionRow } from './version-store.service';

/** A built version with what the routes (not the executor) also need: who contributed, and drift. */
export interface DetailedBuild {
  built: BuiltVersion;
  row: VersionRow;
  contributors: Contributor[];
  drift: DriftEntry[];
}

/**
 * Turns a published version into what runs: the version loaded (VersionStore, cached), its
 * resources resolved for the organization, and the spec composed with the code (VersionComposer).
 * What it returns is data (sealed execution): the executor alone turns a tool into a running
 * implementation. It never refuses for a missing scope: the executor checks scopes per tool, in
 * its own guard order; the read routes refuse.
 */
@Injectable()
export class VersionBuilder {
  constructor(
    private readonly dataSource: DataSource,
    private readonly store: VersionStore,
    private readonly composer: VersionComposer,
    private readonly knowledge: KnowledgeRepository,
    private readonly skills: SkillsRepository,
    private readonly mcp: McpConnectionSync,
  ) {}

  /**
   * Throws ApiError 404 not_found (no such agent in this org / no such version), 409 not_published
   * (no version yet). `contributions` is for the executor only (see ContributionSink).
   */
  async build(
    orgId: string,
    orgScopes: readonly string[],
    agentId: string,
    version: number | 'latest',
    contributions?: ContributionSink,
    /** `applicability`: the run's profile and worker type; `refreshMcpTools`: before a call, MCP tool lists older than MCP_TOOLS_TTL_SECONDS are listed again first. */
    /** `agent`: the agent as the request already read it (VersionStore.loadFrozen's `preread`). */
    options: { applicability?: Applicability; refreshMcpTools?: boolean; agent?: { agent: AgentIdentity | null } } = {},
  ): Promise<BuiltVersion> {
    return (
      await this.buildFrozen(
        orgId,
        orgScopes,
        await this.store.loadFrozen(orgId, agentId, version, options.agent),
        contributions,
        options.applicability,
        options.refreshMcpTools ?? false,
      )
    ).built;
  }

  async buildDetailed(
    orgId: string,
    orgScopes: readonly string[],
    agentId: string,
    version: number | 'latest',
    applicability?: Applicability,
  ): Promise<DetailedBuild> {
    return this.buildFrozen(orgId, orgScopes, await this.store.loadFrozen(orgId, agentId, version), undefined, applicability);
  }

  async buildRow(orgId: string, orgScopes: readonly string[], agent: AgentIdentity, row: VersionRow): Promise<DetailedBuild> {
    return this.buildFrozen(orgId, orgScopes, this.store.frozenOf(orgId, agent, row));
  }

  /** The agent (of this organization) and one of its versions, without building it. */
  load(orgId: string, agentId: string, version: number | 'latest'): Promise<{ agent: AgentIdentity; row: VersionRow }> {
    return this.store.load(orgId, agentId, version);
  }

  /** DESIGN.md idea 6: a capability never looks up its own resources; they are resolved for the organization here. */
  async resolveResources(orgId: string, spec: AgentSpec): Promise<ResolvedResources> {
    const knowledgeCollections = await this.knowledge.resolve(orgId, spec.resources?.knowledgeCollections ?? []);
    const skills = await this.skills.resolve(orgId, spec.resources?.skills ?? []);
    return { knowledgeCollections, skills };
  }

  /**
   * Builds every capability of a normalized spec, in spec order. Publish calls it with no pins to
   * learn what a version would offer; reads and the executor build published versions.
   */
  compose(
    org: { id: string; scopes: readonly string[] },
    agent: { id: string; slug: string; name: string; version: number | null },
    spec: AgentSpec,
    resources: ResolvedResources,
    pinned: Record<string, string>,
    mcpConnections: readonly BoundConnection[] = [],
  ): Promise<Composition> {
    return this.composer.compose(org, agent, spec, resources, pinned, undefined, undefined, undefined, mcpConnections);
  }

  /** The spec's bound MCP connections with their current tools (DESIGN.md idea 6, like resources). */
  mcpConnectionsOf(orgId: string, spec: AgentSpec, refreshStale: boolean): Promise<BoundConnection[]> {
    const ids = (spec.mcpServers ?? []).map((b) => b.connection);
    if (ids.length === 0) return Promise.resolve([]);
    return this.mcp.bound(orgId, ids, { refreshStale });
  }

  private async buildFrozen(
    orgId: string,
    orgScopes: readonly string[],
    frozen: FrozenVersion,
    contributions?: ContributionSink,
    applicability?: Applicability,
    refreshMcpTools = false,
  ): Promise<DetailedBuild> {
    const { agent, row } = frozen;
    const resources = await this.resourcesOf(orgId, frozen);
    const mcpConnections = await this.mcpConnectionsOf(orgId, row.spec, refreshMcpTools);
    const composition = await this.composer.compose(
      { id: orgId, scopes: orgScopes },
      { id: agent.id, slug: agent.slug, name: agent.name, version: row.version },
      row.spec,
      resources,
      row.tool_digests,
      frozen,
      contributions,
      applicability,
      mcpConnections,
      row.tool_sources,
    );
    // A tool withheld from this worker is not drift: to it, the version never offered it (404 unknown_tool).
    const pinned = composition.withheld.length ? omit(row.tool_digests, composition.withheld) : row.tool_digests;
    const built: BuiltVersion = {
      orgId,
      agentId: agent.id,
      agentName: agent.name,
      version: row.version,
      specHash: row.spec_hash,
      spec: row.spec,
      systemPrompt: composition.systemPrompt,
      settings: composition.settings,
      limits: composition.limits,
      tools: composition.tools,
      pinnedTools: pinned,
    };
    return { built, row, contributors: composition.contributors, drift: driftOf(pinned, composition.tools, composition.shadowed, row.tool_sources) };
  }

  /** Skills once per version (immutable, see FrozenVersion); knowledge collections every time (their documents change). */
  private async resourcesOf(orgId: string, frozen: FrozenVersion): Promise<ResolvedResources> {
    const spec = frozen.row.spec;
    const knowledgeCollections = await this.knowledge.resolve(orgId, spec.resources?.knowledgeCollections ?? []);
    if (!frozen.skills) this.store.rememberSkills(orgId, frozen, deepFreeze(await this.skills.resolve(orgId, spec.resources?.skills ?? [])));
    return { knowledgeCollections, skills: [...frozen.skills!] };
  }
}

function omit(digests: Readonly<Record<string, string>>, names: readonly string[]): Record<string, string> {
  const drop = new Set(names);
  return Object.fromEntries(Object.entries(digests).filter(([name]) => !drop.has(name)));
}
