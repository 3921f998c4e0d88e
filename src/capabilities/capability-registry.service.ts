import { Injectable, OnModuleInit } from '@nestjs/common';
import type { FieldError } from '../common/api-error';
import { CapabilityDescriptor, toDescriptor, ToolDescriptor } from './capability-catalog';
import { checkDefinition } from './capability-definition';
import { CapabilityDriftError, CapabilityRegistrationError } from './capability.errors';
import { CapabilityExplorer } from './capability.explorer';
import type { BuildContext, CapabilityDefinition, CapabilityProvider, StampedContribution, ToolDeclaration } from './capability.types';
import { classSchema, JSONSchema } from './class-schema';
import { validateWithClass } from './class-validation';
import { requiresApproval } from '../runtime/tool-policy';

export type { CapabilityDescriptor, ToolDescriptor } from './capability-catalog';
export type { JSONSchema } from './class-schema';

export interface RegisteredTool {
  declaration: ToolDeclaration;
  /** What the model is offered; validated arguments follow the same class. */
  inputSchema: JSONSchema;
  /** From the tool policy: risk != read_only, or interruptBefore. */
  requiresApproval: boolean;
}

export interface RegisteredCapability {
  definition: CapabilityDefinition;
  /** Draft 2020-12 object schema; every optional field carries its default. */
  configSchema: JSONSchema;
  tools: RegisteredTool[];
}

interface Entry extends RegisteredCapability {
  provider: CapabilityProvider;
  toolsById: Map<string, RegisteredTool>;
  descriptor: CapabilityDescriptor;
}

interface RegistryState {
  byId: Map<string, Entry>;
  sorted: Entry[];
  catalog: CapabilityDescriptor[];
}

/** What a capability without a config class accepts: `{}` and nothing else. */
class NoConfig {}

/**
 * Holds every capability the code base declares, proven well-formed at boot. Everything the
 * product knows about capabilities (the catalog, publish, the executor) reads it from here; no
 * configuration can add to it.
 */
@Injectable()
export class CapabilityRegistry implements OnModuleInit {
  private state?: RegistryState;

  constructor(private readonly explorer: CapabilityExplorer) {}

  /** Loads at boot so a bad set stops the start, not the first request. */
  onModuleInit(): void {
    this.loaded();
  }

  /** Sorted by id. */
  all(): RegisteredCapability[] {
    return this.loaded().sorted.map(publicView);
  }

  get(id: string): RegisteredCapability | undefined {
    const entry = this.loaded().byId.get(id);
    return entry && publicView(entry);
  }

  /** API.md CapabilityDescriptor without `available`, sorted by id; computed once. */
  catalog(): CapabilityDescriptor[] {
    return this.loaded().catalog;
  }

  /**
   * Validates a capability's config as given in an agent spec (absent = `{}`). `value` is the
   * plain object with every default filled in: what a published spec stores. Error paths are
   * relative to the config object.
   */
  validateConfig(capabilityId: string, config: unknown): { value: Record<string, unknown>; errors: FieldError[]; omitted?: number } {
    const entry = this.entry(capabilityId);
    const result = validateWithClass(entry.definition.configSchema ?? NoConfig, config === undefined ? {} : config);
    return { value: result.plain, errors: result.errors, omitted: result.omitted };
  }

  /**
   * Validates a tool's arguments. `value` is the instance of the declared input class handed to
   * `execute`; `plain` is its JSON form, which is what gets hashed, stored and approved.
   */
  validateToolInput(
    capabilityId: string,
    toolId: string,
    args: unknown,
  ): { value: object; plain: Record<string, unknown>; errors: FieldError[]; omitted?: number } {
    const tool = this.entry(capabilityId).toolsById.get(toolId);
    if (!tool) throw new Error(`Capability "${capabilityId}" declares no tool "${toolId}"`);
    return validateWithClass(tool.declaration.input, args);
  }

  /**
   * Builds a capability for one agent and stamps the contribution with the capability id. The
   * built tools must be exactly the declared ones: anything else throws a CapabilityDriftError.
   */
  async build(capabilityId: string, ctx: BuildContext): Promise<StampedContribution | null> {
    const entry = this.entry(capabilityId);
    const contribution = await entry.provider.build(ctx);
    if (contribution === null) return null;
    const tools = contribution.tools ?? [];
    const declared = new Set(entry.toolsById.keys());
    const seen = new Set<string>();
    const undeclared: string[] = [];
    const malformed: string[] = [];
    for (const tool of tools) {
      const id = String(tool?.id);
      if (!declared.has(id)) undeclared.push(id);
      else if (seen.has(id) || typeof tool.execute !== 'function') malformed.push(id);
      seen.add(id);
    }
    const missing = [...declared].filter((id) => !seen.has(id));
    if (undeclared.length || missing.length || malformed.length) {
      throw new CapabilityDriftError(capabilityId, undeclared, missing, malformed);
    }
    return { ...contribution, capabilityId, tools };
  }

  private entry(capabilityId: string): Entry {
    const entry = this.loaded().byId.get(capabilityId);
    if (!entry) throw new Error(`No capability "${capabilityId}" is registered`);
    return entry;
  }

  private loaded(): RegistryState {
    return (this.state ??= this.load());
  }

  private load(): RegistryState {
    const { found, problems } = this.explorer.explore();
    const entries: Entry[] = [];
    const capabilityOwners = new Map<string, string>();
    const toolOwners = new Map<string, string>();

    for (const { definition, provider, className } of found) {
      const culprit = `capability "${definition.id}" (${className})`;
      const definitionProblems = checkDefinition(definition, culprit);
      problems.push(...definitionProblems);
      if (definitionProblems.length) continue;

      const owner = capabilityOwners.get(definition.id);
      if (owner) problems.push(`${culprit}: id "${definition.id}" is already registered by ${owner}`);
      capabilityOwners.set(definition.id, className);

      const configClass = definition.configSchema ?? NoConfig;
      const config = classSchema(configClass, { requireDefaults: true });
      problems.push(...config.problems.map((p) => `${culprit}: config ${configClass.name}: ${p}`));

      const tools: RegisteredTool[] = definition.tools.map((declaration) => {
        const toolOwner = toolOwners.get(declaration.id);
        if (toolOwner) problems.push(`${culprit}: tool id "${declaration.id}" is already declared by capability "${toolOwner}"`);
        toolOwners.set(declaration.id, definition.id);
        const input = classSchema(declaration.input, { requireDefaults: false });
        problems.push(...input.problems.map((p) => `${culprit}: tool "${declaration.id}" input ${declaration.input.name}: ${p}`));
        return { declaration, inputSchema: input.schema, requiresApproval: requiresApproval(declaration) };
      });

      const descriptor = toDescriptor(definition, config.schema, tools.map(toolDescriptor));
      entries.push({ definition, configSchema: config.schema, tools, provider, toolsById: new Map(tools.map((t) => [t.declaration.id, t])), descriptor });
    }
    if (problems.length) throw new CapabilityRegistrationError(problems);

    const sorted = entries.sort((a, b) => (a.definition.id < b.definition.id ? -1 : 1));
    return {
      byId: new Map(sorted.map((e) => [e.definition.id, e])),
      sorted,
      catalog: deepFreeze(sorted.map((e) => e.descriptor)),
    };
  }
}

function publicView(entry: Entry): RegisteredCapability {
  return { definition: entry.definition, configSchema: entry.configSchema, tools: entry.tools };
}

function toolDescriptor(tool: RegisteredTool): ToolDescriptor {
  const d = tool.declaration;
  return {
    id: d.id,
    description: d.description,
    risk: d.risk,
    requiresApproval: tool.requiresApproval,
    interruptBefore: d.interruptBefore ?? false,
    maxOutputTokens: d.maxOutputTokens ?? 0,
    offloadLargeResults: d.offloadLargeResults ?? false,
    inputSchema: tool.inputSchema,
  };
}

/** The catalog is shared by every request; freezing it keeps one request from editing another's answer. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    Object.freeze(value);
    Object.values(value).forEach(deepFreeze);
  }
  return value;
}
