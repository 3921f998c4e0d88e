import type { BudgetedResult } from '../runtime/output-budget';
import { ApprovalReason, ApprovalStatus, ApprovalView, EntryPoint, ToolCallStatus, ToolCallView } from './tool-calls.dto';

/** How tool calls and approvals are stored and read back: their rows, the columns read, and their views. */

/** Who acts when nobody does: the background jobs, in the audit log. */
export const SYSTEM_ACTOR = { type: 'system', id: 'tool-call-sweeper' } as const;

/**
 * A call whose process died while it ran. A built-in tool's writes commit with its outcome
 * (CallTransaction), so none of them stands; a vendor's MCP server acts outside this database, and
 * the request may have reached it before the process died.
 */
export const INTERRUPTED_MESSAGE = 'The process running this call stopped before it finished; nothing the tool changed was kept. It was not run again.';
export const INTERRUPTED_UPSTREAM_MESSAGE =
  "The process running this call stopped before the MCP server's answer was recorded: the tool may have run on the server. It was not run again.";
export const EXPIRED_MESSAGE = 'Nobody decided on the approval before it expired. The tool did not run.';

export interface ToolCallRow {
  id: string;
  org_id: string;
  agent_id: string;
  version: number;
  tool: string;
  capability_id: string;
  tool_id: string;
  run_id: string | null;
  entry_point: EntryPoint;
  arguments: Record<string, unknown>;
  arguments_hash: string;
  executed_arguments: Record<string, unknown> | null;
  executed_arguments_hash: string | null;
  /** As read: a pending call past its approval's expiry reads `expired`. */
  status: ToolCallStatus;
  result: unknown;
  result_truncated: boolean;
  result_offloaded: boolean;
  error_code: string | null;
  error_message: string | null;
  approval_id: string | null;
  requested_by: string;
  awaiting_requester: boolean;
  created_at: Date;
  completed_at: Date | null;
}

export interface ApprovalRow {
  id: string;
  org_id: string;
  tool_call_id: string;
  agent_id: string;
  version: number;
  tool: string;
  capability_id: string;
  tool_id: string;
  arguments: Record<string, unknown>;
  arguments_hash: string;
  reason: ApprovalReason;
  status: ApprovalStatus;
  requested_by: string;
  decided_by: string | null;
  decided_at: Date | null;
  note: string | null;
  approved_arguments: Record<string, unknown> | null;
  approved_arguments_hash: string | null;
  expires_at: Date;
  created_at: Date;
}

/** The columns of a call as clients read it: expiry is a fact of time, true before the sweeper writes it. */
export const CALL_COLUMNS = `
  c.id, c.org_id, c.agent_id, c.version, c.tool, c.capability_id, c.tool_id, c.run_id, c.entry_point,
  c.arguments, c.arguments_hash, c.executed_arguments, c.executed_arguments_hash,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN 'expired' ELSE c.status END AS status,
  c.result, c.result_truncated, c.result_offloaded,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN 'approval_expired' ELSE c.error_code END AS error_code,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN '${EXPIRED_MESSAGE}' ELSE c.error_message END AS error_message,
  c.approval_id, c.requested_by, c.awaiting_requester, c.created_at,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN c.approval_expires_at ELSE c.completed_at END AS completed_at`;

export const APPROVAL_COLUMNS = `
  a.id, a.org_id, a.tool_call_id, a.agent_id, a.version, a.tool, a.capability_id, a.tool_id, c.arguments, a.arguments_hash,
  a.reason, CASE WHEN a.status = 'pending' AND a.expires_at <= now() THEN 'expired' ELSE a.status END AS status,
  a.requested_by, a.decided_by, a.decided_at, a.note, a.approved_arguments, a.approved_arguments_hash, a.expires_at, a.created_at`;

export function toToolCallView(r: ToolCallRow): ToolCallView {
  const view: ToolCallView = {
    id: r.id,
    agentId: r.agent_id,
    version: r.version,
    tool: r.tool,
    capabilityId: r.capability_id,
    toolId: r.tool_id,
    runId: r.run_id,
    arguments: r.arguments,
    argumentsHash: r.arguments_hash,
    status: r.status,
    argumentsEdited: r.executed_arguments !== null,
    entryPoint: r.entry_point,
    requestedBy: r.requested_by,
    createdAt: iso(r.created_at),
    completedAt: r.completed_at ? iso(r.completed_at) : null,
  };
  if (r.status === 'succeeded') {
    view.result = r.result;
    view.resultTruncated = r.result_truncated;
    if (r.result_offloaded) view.resultRef = resultRefOf(r.id);
  }
  if (r.error_code) view.error = { code: r.error_code, message: r.error_message ?? '' };
  if (r.approval_id) view.approvalId = r.approval_id;
  if (r.executed_arguments) {
    view.executedArguments = r.executed_arguments;
    view.executedArgumentsHash = r.executed_arguments_hash ?? undefined;
  }
  return view;
}

export function toApprovalView(r: ApprovalRow): ApprovalView {
  const view: ApprovalView = {
    id: r.id,
    toolCallId: r.tool_call_id,
    agentId: r.agent_id,
    version: r.version,
    tool: r.tool,
    capabilityId: r.capability_id,
    toolId: r.tool_id,
    arguments: r.arguments,
    argumentsHash: r.arguments_hash,
    reason: r.reason,
    status: r.status,
    requestedBy: r.requested_by,
    expiresAt: iso(r.expires_at),
    createdAt: iso(r.created_at),
  };
  if (r.decided_by) view.decidedBy = r.decided_by;
  if (r.decided_at) view.decidedAt = iso(r.decided_at);
  if (r.note !== null) view.note = r.note;
  if (r.approved_arguments) {
    view.approvedArguments = r.approved_arguments;
    view.approvedArgumentsHash = r.approved_arguments_hash ?? undefined;
  }
  return view;
}

export function resultRefOf(callId: string): string {
  return `/api/v1/tool-calls/${callId}/result`;
}

export function iso(d: Date | string): string {
  return new Date(d).toISOString();
}

/** A new call, fully described before it is written: the answer is built from it, not read back. */
export interface NewCall {
  id: string;
  orgId: string;
  agentId: string;
  version: number;
  tool: string;
  capabilityId: string;
  toolId: string;
  runId: string | null;
  entryPoint: EntryPoint;
  arguments: Record<string, unknown>;
  argumentsHash: string;
  requestedBy: string;
  createdAt: Date;
}

export type Settlement = ({ status: 'succeeded' } & BudgetedResult) | { status: 'failed'; error: { code: string; message: string } };

export type { ClaimCompletion } from './idempotency.repository';

export function viewOfNewCall(call: NewCall, status: ToolCallStatus, extra: Partial<ToolCallView> = {}): ToolCallView {
  return {
    id: call.id,
    agentId: call.agentId,
    version: call.version,
    tool: call.tool,
    capabilityId: call.capabilityId,
    toolId: call.toolId,
    runId: call.runId,
    arguments: call.arguments,
    argumentsHash: call.argumentsHash,
    status,
    argumentsEdited: false,
    entryPoint: call.entryPoint,
    requestedBy: call.requestedBy,
    createdAt: call.createdAt.toISOString(),
    completedAt: null,
    ...extra,
  };
}

/** A DataSource or a transaction's EntityManager. */
export interface Queryable {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rows' shape is each caller's to declare, as TypeORM's own query() does
  query(sql: string, params?: unknown[]): Promise<any>;
}

/** Which calls a list reads (`GET /tool-calls`'s filters), all of them at once. */
export interface CallFilter {
  agentId?: string;
  /** Only these agents' calls: a key pinned to them (agentScopeOf). */
  agents?: readonly string[];
  status?: ToolCallStatus;
  runId?: string;
  entryPoint?: EntryPoint;
  limit?: number;
  cursor?: string;
}
