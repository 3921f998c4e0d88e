import type { ToolRisk } from '../capabilities/capability.types';

/**
 * The one tool policy (DESIGN.md idea 7): why a tool needs approval, which scopes are missing,
 * and whether a tool can run now. The catalog, publish, the version composer, the read routes,
 * MCP's tool list and the executor all ask these functions; none of them writes the rule again.
 * Pure and dependency-free on purpose, so that every layer may import it.
 */

/** Why a call waits for a person, in the order API.md names them. */
export const APPROVAL_REASONS = ['side_effecting', 'interrupt_before', 'spec_required'] as const;
export type ApprovalReason = (typeof APPROVAL_REASONS)[number];

/** The facts about a tool that decide whether it needs approval. */
export interface ApprovalFacts {
  risk: ToolRisk;
  interruptBefore?: boolean;
  /** The tool's id in its source (a spec's `toolApproval` is keyed by it). */
  toolId?: string;
}

/**
 * Why approval is required, or null. Risk decides first: a tool with a side effect never runs
 * without approval, whatever else is said about it. `toolApproval` is the agent spec's map;
 * only its own entries count (a tool named like an Object.prototype member stays a tool).
 */
export function approvalReasonOf(tool: ApprovalFacts, toolApproval?: Readonly<Record<string, 'required'>>): ApprovalReason | null {
  if (tool.risk !== 'read_only') return 'side_effecting';
  if (tool.interruptBefore === true) return 'interrupt_before';
  if (tool.toolId !== undefined && toolApproval !== undefined && Object.prototype.hasOwnProperty.call(toolApproval, tool.toolId)) {
    if (toolApproval[tool.toolId] === 'required') return 'spec_required';
  }
  return null;
}

export function requiresApproval(tool: ApprovalFacts, toolApproval?: Readonly<Record<string, 'required'>>): boolean {
  return approvalReasonOf(tool, toolApproval) !== null;
}

/** The scopes of `required` that `granted` lacks, in `required`'s order, each once. */
export function missingScopes(required: readonly string[], granted: readonly string[] | ReadonlySet<string>): string[] {
  const has = granted instanceof Set ? granted : new Set(granted as readonly string[]);
  return [...new Set(required.filter((s) => !has.has(s)))];
}

/** What the policy needs to know about an offered tool to say whether it may run now. */
export interface RunnableFacts {
  capabilityId: string;
  /** The tool's id in its source; for an MCP tool `<connection>/<tool>`. */
  toolId: string;
  /** Scopes the tool's source needs. */
  scopes: readonly string[];
  /** The digest of the definition as the code has it now, and as it was pinned at publish. */
  digest: string;
  pinnedDigest: string | undefined;
}

/**
 * The organization's incident-response switches that apply to one version (see src/governance/):
 * whether the version is retired, and the tools an administrator disabled, by `toolKey`.
 */
export interface GovernanceFacts {
  versionRetired?: boolean;
  disabledTools?: ReadonlyMap<string, { reason: string | null }>;
}

/** How a disabled tool is named in GovernanceFacts: an MCP tool id holds a `/`, a capability id never a space. */
export function toolKey(capabilityId: string, toolId: string): string {
  return `${capabilityId} ${toolId}`;
}

/** Why a tool offered by a version cannot run now. The executor turns it into its ApiError. */
export type Unrunnable =
  | { code: 'version_retired' }
  | { code: 'tool_disabled'; reason: string | null }
  | { code: 'tool_definition_changed' }
  | { code: 'scope_not_granted'; missingScopes: string[] };

/**
 * Whether an offered tool can run now, and if not, the first reason in the executor's guard
 * order. This is the place for every "can it run now" rule: a definition changed since publish
 * (drift), a scope the organization no longer holds, and, when they exist, a retired version or
 * a tool an administrator disabled. MCP's `tools/list` filters with it and the executor refuses
 * with it, so a listed tool and a callable tool are the same set.
 */
export function whyCannotRun(tool: RunnableFacts, grantedScopes: readonly string[] | ReadonlySet<string>, governance: GovernanceFacts = {}): Unrunnable | null {
  // The switches first: in an incident, the answer names the decision a person made, whatever else holds.
  if (governance.versionRetired) return { code: 'version_retired' };
  const disabled = governance.disabledTools?.get(toolKey(tool.capabilityId, tool.toolId));
  if (disabled) return { code: 'tool_disabled', reason: disabled.reason };
  // A tool the version never pinned was never reviewed either.
  if (tool.pinnedDigest === undefined || tool.digest !== tool.pinnedDigest) return { code: 'tool_definition_changed' };
  const missing = missingScopes(tool.scopes, grantedScopes);
  if (missing.length > 0) return { code: 'scope_not_granted', missingScopes: missing };
  return null;
}

export function canRunNow(tool: RunnableFacts, grantedScopes: readonly string[] | ReadonlySet<string>, governance: GovernanceFacts = {}): boolean {
  return whyCannotRun(tool, grantedScopes, governance) === null;
}
