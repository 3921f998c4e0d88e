import type { ToolDeclaration, ToolRisk } from '../capabilities/capability.types';
import type { ApprovalReason } from '../runtime/tool-policy';

/** The agent spec as stored in a draft and, normalized, in a version (API.md, AgentSpec). */
export interface AgentSpec {
  instructions: string;
  capabilities: { id: string; config?: Record<string, unknown> }[];
  resources?: { knowledgeCollections?: string[]; skills?: string[] };
  toolApproval?: Record<string, 'required'>;
  toolOverrides?: Record<string, { name?: string; description?: string }>;
  /** MCP connections bound to the agent; `tools` is an allow-list (absent: every tool). */
  mcpServers?: { connection: string; tools?: string[] }[];
  /** The model that runs the agent (API.md, Models and runs); without it, runs are refused. */
  model?: ModelRef;
}

/** A model of one of the organization's providers, and how to call it. */
export interface ModelRef {
  provider: string;
  name: string;
  temperature?: number;
  maxOutputTokens?: number;
  /** Tokens the model reads at most (prompt and answer); compaction keeps the conversation under it. */
  contextWindow?: number;
}

/** What the model is offered (API.md, OfferedTool). */
export interface OfferedTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  capabilityId: string;
  toolId: string;
  risk: ToolRisk;
  requiresApproval: boolean;
  /** MCP catalog tools only (`capabilityId: "mcp"`): the connection that serves it. */
  source?: { connectionId: string; server: string };
}

/**
 * An offered tool with every fact the tool policy and the executor need about it. Data only:
 * sealed execution (DESIGN.md idea 8) means no module outside `src/runtime/` ever holds a way to
 * run a tool; the executor resolves the implementation itself (src/runtime/tool-implementations.ts).
 */
export interface VersionTool extends OfferedTool {
  /** What the runner reads (output budget, interruptBefore); an MCP tool's has no input class. */
  declaration: Omit<ToolDeclaration, 'input'> & { input?: ToolDeclaration['input'] };
  /** Scopes the tool's capability needs, checked again at every dispatch. */
  scopes: readonly string[];
  /** From the tool policy (`approvalReasonOf`); null when no approval is needed. */
  approvalReason: ApprovalReason | null;
  /** The digest of the definition as the code has it now, and as it was pinned at publish. */
  digest: string;
  pinnedDigest: string | undefined;
}

/** A published version built for one organization: what runtimes read and what the executor runs. */
export interface BuiltVersion {
  orgId: string;
  agentId: string;
  agentName: string;
  version: number;
  specHash: string;
  spec: AgentSpec;
  systemPrompt: string;
  settings: Record<string, unknown>;
  /** The strictest of the limits contributed by capabilities. */
  limits: { maxToolCallsPerRun?: number };
  tools: readonly VersionTool[];
  /** The version's `toolDigests`: every tool name it offered at publish, even one the code no longer builds. */
  pinnedTools: Readonly<Record<string, string>>;
}
