import type { Type } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/**
 * The shapes every part of the product agrees on: what a capability declares (static, reviewed in
 * code), what it contributes when built for one agent, and what a tool receives when it runs.
 */

export const TOOL_RISKS = ['read_only', 'mutating', 'destructive'] as const;
export type ToolRisk = (typeof TOOL_RISKS)[number];

/** A model accepts tool names of this shape (OpenAI, Anthropic and MCP alike). */
export const TOOL_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

export interface ToolDeclaration {
  id: string;
  /** Prompt: says when to reach for the tool. The same text the person choosing approvals reads. */
  description: string;
  /** No default on purpose: forgetting it must not make a tool read-only. */
  risk: ToolRisk;
  /** A class-validator class: its JSON Schema is what the model is offered, and it validates the arguments. */
  input: Type<object>;
  interruptBefore?: boolean;
  /**
   * The shape of a successful result, when it is always an object: a class-validator class like
   * `input`. MCP clients get its JSON Schema as the tool's `outputSchema` (and may check results
   * against it); nothing else reads it.
   */
  output?: Type<object>;
  /** Calling again with the same arguments changes nothing more (MCP `idempotentHint`). Read-only tools are. */
  idempotent?: boolean;
  /** The tool reaches systems outside this platform (MCP `openWorldHint`). Tools of vendor MCP servers do. */
  openWorld?: boolean;
  /** 0 = no limit. */
  maxOutputTokens?: number;
  offloadLargeResults?: boolean;
}

export interface CapabilityDefinition {
  id: string;
  name: string;
  category: string;
  description: string;
  /** Required; `[]` for a capability without tools. */
  tools: readonly ToolDeclaration[];
  /** A class-validator class whose optional fields all have initializers (defaults). */
  configSchema?: Type<object>;
  scopes?: readonly string[];
  tags?: readonly string[];
  profiles?: readonly string[];
  workerTypes?: readonly string[];
  promptGuidance?: string;
}

export interface ResolvedKnowledgeCollection {
  id: string;
  name: string;
  description: string | null;
  documentCount: number;
}

/**
 * A bound skill as a build and list_skills see it: never its instructions (up to 100,000
 * characters, 400 KB of astral ones), which only load_skill reads, one skill at a time. Kept with
 * every cached version and read for every list, 200 skills' instructions took the node's heap
 * (attack round 6).
 */
export interface ResolvedSkill {
  id: string;
  name: string;
  description: string;
}

/** Resources resolved from the database for the organization before a capability is built. */
export interface ResolvedResources {
  knowledgeCollections: ResolvedKnowledgeCollection[];
  skills: ResolvedSkill[];
}

export interface BuildContext<C = unknown> {
  org: { id: string; scopes: readonly string[] };
  agent: { id: string; slug: string; name: string; version: number | null };
  /** Validated, defaults applied. */
  config: C;
  resources: ResolvedResources;
}

/** Everything a running tool may know about the call it serves. */
export interface ToolContext {
  orgId: string;
  agentId: string;
  version: number;
  callId: string;
  runId: string | null;
  /** Aborted on timeout; a tool that does I/O should pass it on. */
  signal: AbortSignal;
  /**
   * Runs the write that is the tool's side effect in the product's database, with `db`: a
   * transaction that commits with the call's outcome and its audit event, only when the call
   * succeeds, so the database holds both or neither (a crash, or a failed settlement, undoes the
   * write). A write that throws rolls back what the call wrote. Refused with the timeout once it
   * has passed, and after the tool returned; once started, waited for, so a write that is kept is
   * never reported as a timeout. Check `signal` inside it before the point of no return.
   *
   * Make it the tool's last I/O, and query only through `db` inside it: until the call settles,
   * the transaction holds its connection (the embedded database has one). A read-only tool has no
   * effect: it is refused there.
   */
  effect<T>(write: (db: EntityManager) => Promise<T>): Promise<T>;
}

/**
 * A tool's own failure: a result the model can act on, not an HTTP error. `code` and `message`
 * are shown to the model and the client, so they must not leak internals.
 */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

export interface BuiltTool {
  /** Must equal a declared tool id. */
  id: string;
  /** `args` are validated instances of the declared input class. The result must be JSON-serializable. */
  // `any` so an implementation can name its own input class as the parameter's type.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  execute(args: any, ctx: ToolContext): unknown | Promise<unknown>;
}

/** What a capability adds to one agent. */
export interface CapabilityContribution {
  tools?: BuiltTool[];
  /**
   * Prompt text for this agent; when absent, the declaration's static `promptGuidance` is used. A
   * function is called only when the prompt is read (a run's step, MCP `initialize`, a version
   * read), never for a tool call: a prompt made from the agent's resources (200 collections'
   * descriptions are 1.76 MB) costs a tool call nothing then.
   */
  prompt?: string | (() => string);
  /** Shown in the manifest's `settings[capabilityId]`. */
  settings?: Record<string, unknown>;
  /** Limits the executor enforces per run. */
  limits?: { maxToolCallsPerRun?: number };
}

/** A contribution stamped by the registry with the capability it came from. */
export interface StampedContribution extends CapabilityContribution {
  capabilityId: string;
  tools: BuiltTool[];
}

/** The provider that carries the `@Capability()` decorator implements this. */
export interface CapabilityProvider<C = unknown> {
  /** `null`: contributes nothing to this agent (a tool that never helps is worse than none). */
  build(ctx: BuildContext<C>): CapabilityContribution | null | Promise<CapabilityContribution | null>;
}
