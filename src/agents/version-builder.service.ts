import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ResolvedResources } from '../capabilities/capability.types';
import { KnowledgeRepository } from '../knowledge/knowledge.repository';
import { SkillsRepository } from '../skills/skills.repository';
import { BoundConnection, McpConnectionSync } from '../mcp-catalog/connections/mcp-connection-sync.service';
import type { AgentSpec, BuiltVersion, VersionTool } from './built-version';
import { Applicability, Composition, ContributionSink, Contributor, driftOf, DriftEntry, VersionComposer } from './version-composer.service';
import { AgentIdentity, deepFreeze, FrozenVersion, VersionRow, VersionStore } from './version-store.service';

export type { Applicability, Composition, ContributionSink, Contributor, DriftEntry } from './version-composer.service';
export { driftOf } from './version-composer.service';
export { FROZEN_VERSIONS_CACHED } from './version-store.service';
export type { AgentIdentity, VersionRow } from './version-store.service';

/**
 * What the versions of one page bind, read for the page at once (`VersionBuilder.bindingsOf`):
 * the knowledge collections and skills named by any of them, by id, and the MCP connections by
 * the list a version names (what a version may read of them is bounded per version, in its order).
 */
export interface PageBindings {
  collections: ReadonlyMap<string, ResolvedResources['knowledgeCollections'][number]>;
  skills: ReadonlyMap<string, ResolvedResources['skills'][number]>;
  /** The skill ids read for the page: a version's skills come from it only when all of its are here. */
  skillsRead: ReadonlySet<string>;
  connections: ReadonlyMap<string, BoundConnection[]>;
}

/** A version's MCP connections as PageBindings keys them. */
const connectionsKey = (spec: AgentSpec) => JSON.stringify((spec.mcpServers ?? []).map((b) => b.connection));

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
    return withDrift(await this.buildFrozen(orgId, orgScopes, await this.store.loadFrozen(orgId, agentId, version), undefined, applicability));
  }

  /** `page`: the bindings of the page `row` is listed in, read once for it (bindingsOf). */
  async buildRow(orgId: string, orgScopes: readonly string[], agent: AgentIdentity, row: VersionRow, page?: PageBindings): Promise<DetailedBuild> {
    return withDrift(await this.buildFrozen(orgId, orgScopes, this.store.frozenOf(orgId, agent, row), undefined, undefined, false, page));
  }

  /**
   * What `rows` bind, in two statements for the whole page and one for each list of connections
   * its versions name (mostly one): each version's build read its own collections and connections
   * (and skills, when not remembered): a page of 200 versions made up to 600 round trips, one after
   * another (attack round 11, G-F6). Read as each build read them: the connections' lists as
   * stored, none listed again, and each version's within the bound of what one version may read
   * (BOUND_LISTS_MAX_BYTES, in its order), which a union of the page's could pass.
   */
  async bindingsOf(orgId: string, rows: readonly VersionRow[]): Promise<PageBindings> {
    const ids = (pick: (spec: AgentSpec) => readonly string[] | undefined) => [...new Set(rows.flatMap((r) => pick(r.spec) ?? []))];
    // Versions of one agent mostly name the same connections: one read for each list named.
    const lists = [...new Set(rows.filter((r) => (r.spec.mcpServers ?? []).length > 0).map((r) => connectionsKey(r.spec)))];
    // Skills only of the versions whose skills this node has not kept yet (they never change), read
    // by this request's own statement: reading all of a page's (up to the organization's 1,000
    // skills, 8.8 MB) took each page 87 ms, in the skills tools' shared queue, and one viewer's
    // pages held every organization's skill lookups 300 ms (attack round 16, T-F3).
    const skillIds = [...new Set(rows.filter((r) => !this.store.skillsKept(orgId, r.agent_id, r.version)).flatMap((r) => r.spec.resources?.skills ?? []))];
    const [collections, skills, connections] = await Promise.all([
      this.knowledge.resolve(
        orgId,
        ids((s) => s.resources?.knowledgeCollections),
      ),
      this.skills.resolveNow(orgId, skillIds),
      Promise.all(lists.map(async (key) => [key, await this.mcp.bound(orgId, JSON.parse(key) as string[], { refreshStale: false })] as const)),
    ]);
    const byId = <T extends { id: string }>(items: readonly T[]) => new Map(items.map((i) => [i.id, i]));
    return { collections: byId(collections), skills: byId(skills), skillsRead: new Set(skillIds), connections: new Map(connections) };
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
    page?: PageBindings,
  ): Promise<Omit<DetailedBuild, 'drift'> & { shadowed: readonly VersionTool[] }> {
    const { agent, row } = frozen;
    const resources = await this.resourcesOf(orgId, frozen, page);
    const mcpConnections = page ? (page.connections.get(connectionsKey(row.spec)) ?? []) : await this.mcpConnectionsOf(orgId, row.spec, refreshMcpTools);
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
      get systemPrompt() {
        return composition.systemPrompt;
      },
      settings: composition.settings,
      limits: composition.limits,
      tools: composition.tools,
      pinnedTools: pinned,
    };
    return { built, row, contributors: composition.contributors, shadowed: composition.shadowed };
  }

  /** Skills once per version (immutable, see FrozenVersion); knowledge collections every time (their documents change). */
  private async resourcesOf(orgId: string, frozen: FrozenVersion, page?: PageBindings): Promise<ResolvedResources> {
    const spec = frozen.row.spec;
    const collectionIds = spec.resources?.knowledgeCollections ?? [];
    const knowledgeCollections = page ? picked(page.collections, collectionIds) : await this.knowledge.resolve(orgId, collectionIds);
    if (!frozen.skills) {
      const skillIds = spec.resources?.skills ?? [];
      const read = page && skillIds.every((id) => page.skillsRead.has(id));
      this.store.rememberSkills(orgId, frozen, deepFreeze(read ? picked(page.skills, skillIds) : await this.skills.resolve(orgId, skillIds)));
    }
    return { knowledgeCollections, skills: [...frozen.skills!] };
  }
}

/**
 * What a read shows: drift is every pin compared with what is offered, which a call does not need
 * (the executor compares its one tool's), and a walk of 10,000 pins was a tenth of such a call.
 */
function withDrift(b: Omit<DetailedBuild, 'drift'> & { shadowed: readonly VersionTool[] }): DetailedBuild {
  const { built, row, contributors, shadowed } = b;
  return { built, row, contributors, drift: driftOf(built.pinnedTools, built.tools, shadowed, row.tool_sources) };
}

/** The items of `ids` found in `byId`, in the order of `ids` (missing ones left out), as each resolver answers. */
function picked<T>(byId: ReadonlyMap<string, T>, ids: readonly string[]): T[] {
  return ids.flatMap((id) => {
    const item = byId.get(id);
    return item === undefined ? [] : [item];
  });
}

function omit(digests: Readonly<Record<string, string>>, names: readonly string[]): Record<string, string> {
  const drop = new Set(names);
  return Object.fromEntries(Object.entries(digests).filter(([name]) => !drop.has(name)));
}
