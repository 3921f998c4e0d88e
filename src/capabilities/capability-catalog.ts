import type { CapabilityDefinition, ToolRisk } from './capability.types';
import { TOOL_RISKS } from './capability.types';
import type { JSONSchema } from './class-schema';
import { missingScopes } from '../runtime/tool-policy';

/** API.md, ToolDescriptor. */
export interface ToolDescriptor {
  id: string;
  description: string;
  risk: ToolRisk;
  requiresApproval: boolean;
  interruptBefore: boolean;
  maxOutputTokens: number;
  offloadLargeResults: boolean;
  inputSchema: JSONSchema;
}

/** API.md, CapabilityDescriptor; `available` is added per request for organization keys. */
export interface CapabilityDescriptor {
  id: string;
  name: string;
  category: string;
  description: string;
  tags: string[];
  profiles: string[];
  workerTypes: string[];
  scopes: string[];
  sideEffecting: boolean;
  risk: ToolRisk;
  promptGuidance: string;
  tools: ToolDescriptor[];
  configSchema: JSONSchema;
  available?: boolean;
}

export interface CatalogFilter {
  category?: string;
  tag?: string;
  profile?: string;
  workerType?: string;
  risk?: ToolRisk;
}

/** The highest risk of a set of tools; read_only when there are none. */
export function highestRisk(risks: readonly ToolRisk[]): ToolRisk {
  return TOOL_RISKS[Math.max(0, ...risks.map((r) => TOOL_RISKS.indexOf(r)))];
}

export function toDescriptor(definition: CapabilityDefinition, configSchema: JSONSchema, tools: ToolDescriptor[]): CapabilityDescriptor {
  const risk = highestRisk(tools.map((t) => t.risk));
  return {
    id: definition.id,
    name: definition.name,
    category: definition.category,
    description: definition.description,
    tags: [...(definition.tags ?? [])],
    profiles: [...(definition.profiles ?? [])],
    workerTypes: [...(definition.workerTypes ?? [])],
    scopes: [...(definition.scopes ?? [])],
    sideEffecting: risk !== 'read_only',
    risk,
    promptGuidance: definition.promptGuidance ?? '',
    tools,
    configSchema,
  };
}

/** Filters combine with AND; an empty `profiles` (`workerTypes`) list applies to every profile (worker type). */
export function matchesFilter(d: CapabilityDescriptor, f: CatalogFilter): boolean {
  return (
    (f.category === undefined || d.category === f.category) &&
    (f.tag === undefined || d.tags.includes(f.tag)) &&
    (f.profile === undefined || d.profiles.length === 0 || d.profiles.includes(f.profile)) &&
    (f.workerType === undefined || d.workerTypes.length === 0 || d.workerTypes.includes(f.workerType)) &&
    (f.risk === undefined || d.risk === f.risk)
  );
}

/**
 * One caller's view of the catalog. `grantedScopes` is given for organization keys only: the
 * platform admin acts for no organization, so "available" means nothing for it.
 */
export function catalogView(catalog: readonly CapabilityDescriptor[], filter: CatalogFilter, grantedScopes?: readonly string[]): CapabilityDescriptor[] {
  const items = catalog.filter((d) => matchesFilter(d, filter));
  if (!grantedScopes) return items;
  const granted = new Set(grantedScopes);
  return items.map((d) => ({ ...d, available: missingScopes(d.scopes, granted).length === 0 }));
}
