import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import type { ResolvedResources, ResolvedSkill, ToolContext } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { ApiError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { KnowledgeService } from '../knowledge/knowledge.service';
import { SkillsService } from '../skills/skills.service';
import type { AgentSpec, BuiltVersion, RunnableTool } from './built-version';
import { ownEntry, ToolDefinitionFacts, toolDigest } from './digests';

/** A pinned tool the code now offers differently (`changed`), no longer offers (`removed`), or offers unpinned (`added`). */
export interface DriftEntry {
  tool: string;
  reason: 'changed' | 'removed' | 'added';
}

/**
 * Which worker of the agent asks (seed 1's `profiles` and `workerTypes`): only the capabilities
 * that apply contribute. A capability with an empty list applies to every profile (worker type),
 * and an unset field asks for no narrowing, as in the catalog's filters.
 */
export interface Applicability {
  profile?: string;
  workerType?: string;
}

export function applies(definition: { profiles?: readonly string[]; workerTypes?: readonly string[] }, a: Applicability | undefined): boolean {
  if (!a) return true;
  const profiles = definition.profiles ?? [];
  const workerTypes = definition.workerTypes ?? [];
  return (
    (a.profile === undefined || profiles.length === 0 || profiles.includes(a.profile)) &&
    (a.workerType === undefined || workerTypes.length === 0 || workerTypes.includes(a.workerType))
  );
}

/** Who contributed to an agent (a `null` build contributes nothing) and the scopes it needs. */
export interface Contributor {
  capabilityId: string;
  scopes: readonly string[];
}

/** A spec composed with the code as it is now: what the model is offered and what runs. */
export interface Composition {
  systemPrompt: string;
  settings: Record<string, unknown>;
  limits: { maxToolCallsPerRun?: number };
  tools: RunnableTool[];
  contributors: Contributor[];
  /** Offered names of the tools of capabilities that do not apply to the worker asking (see Applicability). */
  withheld: string[];
}

export interface VersionRow {
  org_id: string;
  agent_id: string;
  version: number;
  spec: AgentSpec;
  spec_hash: string;
  tool_digests: Record<string, string>;
  content_hash: string;
  published_at: Date;
  published_by: string;
}

export interface AgentIdentity {
  id: string;
  slug: string;
  name: string;
  latest_version: number | null;
}

/** A built version with what the routes (not the executor) also need: who contributed, and drift. */
export interface DetailedBuild {
  built: BuiltVersion;
  row: VersionRow;
  contributors: Contributor[];
  drift: DriftEntry[];
}

/**
 * What never changes about a published version, kept per process so that the hot paths (every
 * tool call, every read of the offered tools) neither query nor recompute it: the version row (the
 * database refuses to change it), its agent's identity (agents are never renamed nor deleted), the
 * skills it binds (a skill cannot be edited, nor deleted while a version binds it), and what the
 * code derives from the spec alone: each capability's validated config and each tool's digest.
 * What can change is NOT here and is read on every build: which version `latest` is, the
 * organization's scopes, the knowledge collections' contents, and whatever a capability's build()
 * computes (it runs on every build, so a clock stays a clock).
 */
interface FrozenVersion {
  agent: { id: string; slug: string; name: string };
  row: VersionRow;
  skills?: readonly ResolvedSkill[];
  configs: Map<string, { value: Record<string, unknown>; errors: FieldError[] }>;
  digests: Map<string, { facts: ToolDefinitionFacts; digest: string }>;
}

/** Published versions kept per process; a miss costs one or two primary-key reads. */
export const FROZEN_VERSIONS_CACHED = 1000;

/** Memo of the pure parts of `compose` for one frozen version. */
interface ComposeMemo {
  configs: FrozenVersion['configs'];
  digests: FrozenVersion['digests'];
}

/**
 * Turns a published version into what runs: resources resolved for the organization, each
 * capability built with its config and resources, overrides and approval rules applied, and
 * every offered tool compared with the digest pinned at publish. It never refuses for a missing
 * scope: the executor checks scopes per tool, in its own guard order; the read routes refuse.
 */
@Injectable()
export class VersionBuilder {
  private readonly logger = new Logger(VersionBuilder.name);
  private readonly frozen = new LruCache<string, FrozenVersion>(FROZEN_VERSIONS_CACHED);

  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: CapabilityRegistry,
    private readonly knowledge: KnowledgeService,
    private readonly skills: SkillsService,
  ) {}

  /** Throws ApiError 404 not_found (no such agent in this org / no such version), 409 not_published (no version yet). */
  async build(orgId: string, orgScopes: readonly string[], agentId: string, version: number | 'latest', applicability?: Applicability): Promise<BuiltVersion> {
    return (await this.buildDetailed(orgId, orgScopes, agentId, version, applicability)).built;
  }

  async buildDetailed(orgId: string, orgScopes: readonly string[], agentId: string, version: number | 'latest', applicability?: Applicability): Promise<DetailedBuild> {
    return this.buildFrozen(orgId, orgScopes, await this.loadFrozen(orgId, agentId, version), applicability);
  }

  async buildRow(orgId: string, orgScopes: readonly string[], agent: AgentIdentity, row: VersionRow): Promise<DetailedBuild> {
    return this.buildFrozen(orgId, orgScopes, this.cached(orgId, agent.id, row.version) ?? this.freeze(orgId, agent, row));
  }

  private async buildFrozen(orgId: string, orgScopes: readonly string[], frozen: FrozenVersion, applicability?: Applicability): Promise<DetailedBuild> {
    const { agent, row } = frozen;
    const resources = await this.resourcesOf(orgId, frozen);
    const composition = await this.compose(
      { id: orgId, scopes: orgScopes },
      { id: agent.id, slug: agent.slug, name: agent.name, version: row.version },
      row.spec,
      resources,
      row.tool_digests,
      frozen,
      applicability,
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
    return { built, row, contributors: composition.contributors, drift: driftOf(pinned, composition.tools) };
  }

  /**
   * The agent (in this organization, with its current pointer) and one of its versions; `latest`
   * follows the pointer. Always reads the agent; the version row comes from the cache when it can.
   */
  async load(orgId: string, agentId: string, version: number | 'latest'): Promise<{ agent: AgentIdentity; row: VersionRow }> {
    const agent = await this.agentRow(orgId, agentId);
    const frozen = await this.versionOf(orgId, agent, version === 'latest' ? agent.latest_version! : version);
    return { agent, row: frozen.row };
  }

  /**
   * Like `load`, for building: a numbered version already seen costs no query at all (nothing
   * deletes agents or versions, and a version cannot change). `latest` always reads the agent's
   * pointer, one primary-key read, so a publish on any node is seen by the next call on every node.
   */
  private async loadFrozen(orgId: string, agentId: string, version: number | 'latest'): Promise<FrozenVersion> {
    if (version !== 'latest') {
      const hit = this.cached(orgId, agentId, version);
      if (hit) return hit;
    }
    const agent = await this.agentRow(orgId, agentId);
    return this.versionOf(orgId, agent, version === 'latest' ? agent.latest_version! : version);
  }

  /** 404 not_found (no such agent in this organization), 409 not_published (no version yet). */
  private async agentRow(orgId: string, agentId: string): Promise<AgentIdentity> {
    const [agent]: AgentIdentity[] = await this.dataSource.query(
      `SELECT id, slug, name, latest_version FROM agent WHERE org_id = $1 AND id = $2`,
      [orgId, agentId],
    );
    if (!agent) throw ApiError.notFound('agent');
    if (agent.latest_version === null) throw ApiError.conflict('The agent has no published version yet; publish it first.', 'not_published');
    return agent;
  }

  private async versionOf(orgId: string, agent: AgentIdentity, version: number): Promise<FrozenVersion> {
    const hit = this.cached(orgId, agent.id, version);
    if (hit) return hit;
    const [row]: VersionRow[] = await this.dataSource.query(
      `SELECT * FROM agent_version WHERE org_id = $1 AND agent_id = $2 AND version = $3`,
      [orgId, agent.id, version],
    );
    if (!row) throw ApiError.notFound('agent version');
    return this.freeze(orgId, agent, row);
  }

  private cached(orgId: string, agentId: string, version: number): FrozenVersion | undefined {
    return this.frozen.get(`${orgId}/${agentId}/${version}`);
  }

  /** Frozen for real: whatever a caller (or a capability) does with them, the next build sees what was published. */
  private freeze(orgId: string, agent: AgentIdentity, row: VersionRow): FrozenVersion {
    const frozen: FrozenVersion = {
      agent: Object.freeze({ id: agent.id, slug: agent.slug, name: agent.name }),
      row: deepFreeze({ ...row }),
      configs: new Map(),
      digests: new Map(),
    };
    this.frozen.set(`${orgId}/${agent.id}/${row.version}`, frozen);
    return frozen;
  }

  /** Skills once per version (immutable, see FrozenVersion); knowledge collections every time (their documents change). */
  private async resourcesOf(orgId: string, frozen: FrozenVersion): Promise<ResolvedResources> {
    const spec = frozen.row.spec;
    const knowledgeCollections = await this.knowledge.resolve(this.dataSource, orgId, spec.resources?.knowledgeCollections ?? []);
    frozen.skills ??= deepFreeze(await this.skills.resolve(this.dataSource, orgId, spec.resources?.skills ?? []));
    return { knowledgeCollections, skills: [...frozen.skills] };
  }

  /** DESIGN.md idea 6: a capability never looks up its own resources; they are resolved for the organization here. */
  async resolveResources(orgId: string, spec: AgentSpec): Promise<ResolvedResources> {
    const knowledgeCollections = await this.knowledge.resolve(this.dataSource, orgId, spec.resources?.knowledgeCollections ?? []);
    const skills = await this.skills.resolve(this.dataSource, orgId, spec.resources?.skills ?? []);
    return { knowledgeCollections, skills };
  }

  /**
   * Builds every capability of a normalized spec, in spec order. Publish calls it with no pins to
   * learn what a version would offer; reads and the executor call it with the version's pins.
   */
  async compose(
    org: { id: string; scopes: readonly string[] },
    agent: { id: string; slug: string; name: string; version: number | null },
    spec: AgentSpec,
    resources: ResolvedResources,
    pinned: Record<string, string>,
    memo?: ComposeMemo,
    applicability?: Applicability,
  ): Promise<Composition> {
    const prompts: string[] = [];
    const settings: Record<string, unknown> = {};
    const limits: { maxToolCallsPerRun?: number } = {};
    const tools: RunnableTool[] = [];
    const contributors: Contributor[] = [];
    const withheld: string[] = [];

    for (const ref of spec.capabilities) {
      const registered = this.registry.get(ref.id);
      if (!registered) {
        // Removed from the code since publish: it contributes nothing, and its pinned tools show as drift.
        this.logger.warn(`agent ${agent.id} v${agent.version}: capability "${ref.id}" is no longer registered`);
        continue;
      }
      if (!applies(registered.definition, applicability)) {
        for (const t of registered.tools) withheld.push(ownEntry(spec.toolOverrides, t.declaration.id)?.name ?? t.declaration.id);
        continue;
      }
      let config = memo?.configs.get(ref.id);
      if (!config) {
        config = this.registry.validateConfig(ref.id, ref.config);
        memo?.configs.set(ref.id, config);
      }
      if (config.errors.length > 0) {
        this.logger.warn(`agent ${agent.id} v${agent.version}: the config of "${ref.id}" no longer validates; it contributes nothing`);
        continue;
      }
      // A copy per build: a capability that changes its config must not change the next build's.
      const contribution = await this.registry.build(ref.id, { org, agent, config: memo ? structuredClone(config.value) : config.value, resources });
      if (contribution === null) continue;

      const definition = registered.definition;
      const scopes = definition.scopes ?? [];
      contributors.push({ capabilityId: definition.id, scopes });
      const prompt = contribution.prompt ?? definition.promptGuidance;
      if (prompt && prompt.trim() !== '') prompts.push(prompt);
      if (contribution.settings !== undefined || contribution.limits !== undefined) {
        settings[definition.id] = { ...(contribution.settings ?? {}), ...(contribution.limits ? { limits: contribution.limits } : {}) };
      }
      const max = contribution.limits?.maxToolCallsPerRun;
      if (max !== undefined) limits.maxToolCallsPerRun = Math.min(max, limits.maxToolCallsPerRun ?? max);

      const builtById = new Map(contribution.tools.map((t) => [t.id, t]));
      // Declaration order, not build order: what is offered does not depend on how build() was written.
      for (const registeredTool of registered.tools) {
        const builtTool = builtById.get(registeredTool.declaration.id);
        if (!builtTool) continue;
        const declaration = registeredTool.declaration;
        const override = ownEntry(spec.toolOverrides, declaration.id) ?? {};
        const specRequired = ownEntry(spec.toolApproval, declaration.id) === 'required';
        const approvalReason: RunnableTool['approvalReason'] =
          declaration.risk !== 'read_only' ? 'side_effecting' : declaration.interruptBefore ? 'interrupt_before' : specRequired ? 'spec_required' : null;
        const facts = {
          name: override.name ?? declaration.id,
          description: override.description ?? declaration.description,
          inputSchema: registeredTool.inputSchema,
          risk: declaration.risk,
          requiresApproval: registeredTool.requiresApproval || specRequired,
        };
        tools.push({
          ...facts,
          capabilityId: definition.id,
          toolId: declaration.id,
          declaration,
          scopes,
          approvalReason,
          digest: memo ? memoizedDigest(memo.digests, `${definition.id}/${declaration.id}`, facts) : toolDigest(facts),
          pinnedDigest: ownEntry(pinned, facts.name),
          execute: (args: unknown, ctx: ToolContext) => builtTool.execute(args, ctx),
        });
      }
    }

    return {
      systemPrompt: [spec.instructions, ...prompts].filter((p) => p.trim() !== '').join('\n\n'),
      settings,
      limits,
      tools,
      contributors,
      withheld,
    };
  }
}

/**
 * The digest is recomputed whenever a fact differs from the memoized one (the schema compared by
 * identity: the registry makes it once and freezes it), so a definition that changes under a
 * running process is still seen as drift; in production that takes a new release, hence a new process.
 */
function memoizedDigest(memo: ComposeMemo['digests'], key: string, facts: ToolDefinitionFacts): string {
  const known = memo.get(key);
  if (
    known &&
    known.facts.name === facts.name &&
    known.facts.description === facts.description &&
    known.facts.inputSchema === facts.inputSchema &&
    known.facts.risk === facts.risk &&
    known.facts.requiresApproval === facts.requiresApproval
  ) {
    return known.digest;
  }
  const digest = toolDigest(facts);
  memo.set(key, { facts, digest });
  return digest;
}

function omit(digests: Readonly<Record<string, string>>, names: readonly string[]): Record<string, string> {
  const drop = new Set(names);
  return Object.fromEntries(Object.entries(digests).filter(([name]) => !drop.has(name)));
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Compares what the code offers now with what was pinned at publish. */
export function driftOf(pinned: Record<string, string>, tools: readonly { name: string; digest: string }[]): DriftEntry[] {
  const drift: DriftEntry[] = [];
  const current = new Map(tools.map((t) => [t.name, t.digest]));
  for (const [name, digest] of Object.entries(pinned)) {
    const now = current.get(name);
    if (now === undefined) drift.push({ tool: name, reason: 'removed' });
    else if (now !== digest) drift.push({ tool: name, reason: 'changed' });
  }
  for (const name of current.keys()) {
    if (!Object.prototype.hasOwnProperty.call(pinned, name)) drift.push({ tool: name, reason: 'added' });
  }
  return drift.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}
