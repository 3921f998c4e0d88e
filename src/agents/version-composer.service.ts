import { Injectable, Logger } from '@nestjs/common';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import type { ResolvedResources, StampedContribution } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { approvalReasonOf } from '../runtime/tool-policy';
import type { BoundConnection } from '../mcp-catalog/connections/mcp-connection-sync.service';
import type { AgentSpec, VersionTool } from './built-version';
import { composeMcpTools, McpCompositions, offerOnce, sourceOf } from './mcp-version-tools';
import { ownEntry, ToolDefinitionFacts, toolDigest } from './digests';
import { ToolReferences } from './tool-references';

/** A pinned tool the code now offers differently (`changed`), no longer offers (`removed`), or offers unpinned (`added`). */
export interface DriftEntry {
  tool: string;
  reason: 'changed' | 'removed' | 'added';
  /**
   * Only on `added` for a tool of another source than the one pinned under that name: one not
   * offered because the pinned tool holds the name (see oneToolPerName), or one that now holds a
   * name whose pinned tool is gone (see driftOf). Its calls never run.
   */
  toolId?: string;
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
  tools: readonly VersionTool[];
  contributors: Contributor[];
  /** Offered names of the tools of capabilities that do not apply to the worker asking (see Applicability). */
  withheld: string[];
  /** Tools not offered because another tool holds their name (oneToolPerName): drift, never called. */
  shadowed: VersionTool[];
}

/** Memo of the pure parts of `compose` for one published version (see VersionStore). */
export interface ComposeMemo {
  configs: Map<string, { value: Record<string, unknown>; errors: FieldError[] }>;
  digests: Map<string, { facts: ToolDefinitionFacts; digest: string }>;
}

/**
 * Receives each capability's contribution as it is built. Only the executor passes one (to
 * resolve implementations, src/runtime/capability-tool.resolver.ts); what the composer returns
 * is data.
 */
export type ContributionSink = (contribution: StampedContribution) => void;

/**
 * Composes a spec with the code as it is now: each capability built with its config and
 * resources, overrides applied, the tool policy's approval reasons, and each tool's digest
 * compared with the pin. Pure with respect to the database: resources arrive resolved.
 */
@Injectable()
export class VersionComposer {
  private readonly logger = new Logger(VersionComposer.name);
  private readonly mcpCompositions = new McpCompositions();

  constructor(private readonly registry: CapabilityRegistry) {}

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
    contributions?: ContributionSink,
    applicability?: Applicability,
    /** The spec's bound MCP connections, resolved for the organization (like resources). */
    mcpConnections: readonly BoundConnection[] = [],
    /** Where each pinned tool's calls went (`tool_sources`); null for a version published before they were pinned. */
    pinnedSources: Readonly<Record<string, string>> | null = null,
  ): Promise<Composition> {
    // Made when the system prompt is first read, not for every tool call (see CapabilityContribution.prompt).
    const prompts: (() => string)[] = [];
    const settings: Record<string, unknown> = {};
    const limits: { maxToolCallsPerRun?: number } = {};
    const tools: VersionTool[] = [];
    const contributors: Contributor[] = [];
    const withheld: string[] = [];
    const references = ToolReferences.of(spec.toolOverrides);

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
      contributions?.(contribution);

      const definition = registered.definition;
      const scopes = definition.scopes ?? [];
      contributors.push({ capabilityId: definition.id, scopes });
      const { prompt } = contribution;
      const guidance = definition.promptGuidance;
      prompts.push(() => references.text((typeof prompt === 'function' ? prompt() : prompt) ?? guidance ?? ''));
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
        const approvalReason = approvalReasonOf(
          { risk: declaration.risk, interruptBefore: declaration.interruptBefore, toolId: declaration.id },
          spec.toolApproval,
        );
        const facts = {
          name: override.name ?? declaration.id,
          description: override.description ?? declaration.description,
          inputSchema: registeredTool.inputSchema,
          risk: declaration.risk,
          requiresApproval: approvalReason !== null,
        };
        // Every field written out (no spread of `facts`): the spread made each entry a slow object
        // to build and to read, measurable per call (docs/benchmarks.md, issue 21). The texts name
        // the offered tools; the digest stays that of the declaration and the spec's overrides,
        // which is what those texts are made from.
        tools.push({
          name: facts.name,
          description: override.description ?? references.text(declaration.description),
          inputSchema: references.schema(facts.inputSchema),
          risk: facts.risk,
          requiresApproval: facts.requiresApproval,
          capabilityId: definition.id,
          toolId: declaration.id,
          declaration,
          scopes,
          approvalReason,
          digest: memo ? memoizedDigest(memo.digests, `${definition.id}/${declaration.id}`, facts) : toolDigest(facts),
          pinnedDigest: ownEntry(pinned, facts.name),
        });
      }
    }

    // After the capabilities' tools, in binding order: MCP tools are data here like any other.
    // Only a published version's (memo): its spec and pins never change.
    const mcp =
      memo && agent.version !== null
        ? this.mcpCompositions.of(`${org.id}/${agent.id}/${agent.version}`, spec, pinned, mcpConnections)
        : composeMcpTools(spec, pinned, mcpConnections);
    contributors.push(...mcp.contributors);
    const offered = offerOnce(tools, mcp, pinnedSources);

    let systemPrompt: string | undefined;
    return {
      get systemPrompt() {
        return (systemPrompt ??= [spec.instructions, ...prompts.map((p) => p())].filter((p) => p.trim() !== '').join('\n\n'));
      },
      settings,
      limits,
      tools: offered.tools,
      contributors,
      withheld,
      shadowed: offered.shadowed,
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

/**
 * Compares what the code offers now with what was pinned at publish. A name whose tool now comes
 * from another source than the pinned one (`pinnedSources`, when the version has them) is the
 * pinned tool `removed` and another `added`, with its `toolId`: a tool of another server is not a
 * new definition of the same tool.
 */
export function driftOf(
  pinned: Record<string, string>,
  tools: readonly Pick<VersionTool, 'name' | 'digest' | 'capabilityId' | 'toolId' | 'source'>[],
  shadowed: readonly { name: string; toolId: string }[] = [],
  pinnedSources: Readonly<Record<string, string>> | null = null,
): DriftEntry[] {
  const drift: DriftEntry[] = [];
  const pins = pinsOf(pinned);
  let matched = 0;
  for (const now of tools) {
    const digest = pins.get(now.name);
    if (digest === undefined) {
      drift.push({ tool: now.name, reason: 'added' });
      continue;
    }
    matched++;
    if (now.digest === digest) continue;
    const source = pinnedSources ? ownEntry(pinnedSources, now.name) : undefined;
    if (source === undefined || source === sourceOf(now)) drift.push({ tool: now.name, reason: 'changed' });
    else drift.push({ tool: now.name, reason: 'removed' }, { tool: now.name, reason: 'added', toolId: now.toolId });
  }
  // Offered names are unique (oneToolPerName), so every pin matched means none was removed.
  if (matched < pins.size) {
    const offered = new Set(tools.map((t) => t.name));
    for (const name of pins.keys()) if (!offered.has(name)) drift.push({ tool: name, reason: 'removed' });
  }
  for (const tool of shadowed) drift.push({ tool: tool.name, reason: 'added', toolId: tool.toolId });
  // Stable: under one name, the entry of the tool that holds it (or held it) comes first.
  return drift.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}

/**
 * A version's pins as a Map, made once for each pins object (a published version's are frozen and
 * kept with it): walking an object of 10,000 names in order (Object.entries) cost 2 ms a read, half
 * of what reading such a version cost the node.
 */
const pinMaps = new WeakMap<Record<string, string>, ReadonlyMap<string, string>>();
function pinsOf(pinned: Record<string, string>): ReadonlyMap<string, string> {
  let pins = pinMaps.get(pinned);
  if (!pins) {
    pins = new Map(Object.entries(pinned));
    if (Object.isFrozen(pinned)) pinMaps.set(pinned, pins);
  }
  return pins;
}
