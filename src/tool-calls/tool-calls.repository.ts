import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditEventInput, auditInsert, AuditService } from '../audit/audit.service';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf } from '../common/pagination';
import type { BudgetedResult } from './output-budget';
import { ApprovalReason, ApprovalStatus, ApprovalView, EntryPoint, ToolCallStatus, ToolCallView } from './tool-calls.dto';

/** Who acts when nobody does: the background jobs, in the audit log. */
export const SYSTEM_ACTOR = { type: 'system', id: 'tool-call-sweeper' } as const;

export const INTERRUPTED_MESSAGE = 'The process running this call stopped before it finished. It was not run again.';
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
const CALL_COLUMNS = `
  c.id, c.org_id, c.agent_id, c.version, c.tool, c.capability_id, c.tool_id, c.run_id, c.entry_point,
  c.arguments, c.arguments_hash, c.executed_arguments, c.executed_arguments_hash,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN 'expired' ELSE c.status END AS status,
  c.result, c.result_truncated, c.result_offloaded,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN 'approval_expired' ELSE c.error_code END AS error_code,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN '${EXPIRED_MESSAGE}' ELSE c.error_message END AS error_message,
  c.approval_id, c.requested_by, c.awaiting_requester, c.created_at,
  CASE WHEN c.status = 'pending_approval' AND c.approval_expires_at <= now() THEN c.approval_expires_at ELSE c.completed_at END AS completed_at`;

const APPROVAL_COLUMNS = `
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

function iso(d: Date | string): string {
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

export type Settlement =
  | ({ status: 'succeeded' } & BudgetedResult)
  | { status: 'failed'; error: { code: string; message: string } };

/** Finishing an idempotency claim in the statement that records the call. */
export interface ClaimCompletion {
  orgId: string;
  agentId: string;
  key: string;
  claimId: string;
  status: number;
  body: unknown;
}

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

/** Builds one statement out of several data-modifying CTEs, numbering parameters as it goes. */
class Statement {
  readonly params: unknown[] = [];
  private readonly ctes: string[] = [];

  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  with(sql: string): this {
    this.ctes.push(`w${this.ctes.length} AS (${sql})`);
    return this;
  }

  finish(lastSql: string): string {
    return this.ctes.length ? `WITH ${this.ctes.join(', ')} ${lastSql}` : lastSql;
  }
}

/**
 * Every statement about tool calls, approvals and their bookkeeping. Each method is one statement
 * or one transaction, and never awaits anything but its own transaction's queries (the embedded
 * database has one connection).
 */
@Injectable()
export class ToolCallsRepository {
  constructor(
    readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * A call that ran without approval: the call, its whole result when offloaded, its audit events
   * and the idempotency answer, in ONE statement (the governed hot path's only write).
   */
  async insertSettled(call: NewCall, settlement: Settlement, completedAt: Date, events: AuditEventInput[], claim?: ClaimCompletion): Promise<void> {
    const s = new Statement();
    const ok = settlement.status === 'succeeded';
    s.with(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
         status, result, result_truncated, result_offloaded, error_code, error_message, requested_by, created_at, started_at, completed_at)
       VALUES (${[
         call.id, call.orgId, call.agentId, call.version, call.tool, call.capabilityId, call.toolId, call.runId, call.entryPoint,
       ].map((v) => s.param(v)).join(', ')}, ${s.param(JSON.stringify(call.arguments))}::jsonb, ${s.param(call.argumentsHash)},
         ${s.param(settlement.status)}, ${s.param(ok ? JSON.stringify(settlement.result) : null)}::jsonb,
         ${s.param(ok && settlement.truncated)}, ${s.param(ok && settlement.offloaded !== undefined)},
         ${s.param(ok ? null : settlement.error.code)}, ${s.param(ok ? null : settlement.error.message)},
         ${s.param(call.requestedBy)}, ${s.param(call.createdAt)}, ${s.param(call.createdAt)}, ${s.param(completedAt)})
       RETURNING id`,
    );
    if (ok && settlement.offloaded) {
      s.with(
        `INSERT INTO tool_call_result (tool_call_id, org_id, result, tokens)
         SELECT w0.id, ${s.param(call.orgId)}::uuid, ${s.param(JSON.stringify(settlement.offloaded.result))}::jsonb, ${s.param(settlement.offloaded.tokens)}::integer
           FROM w0`,
      );
    }
    if (claim) s.with(this.completeClaimSql(s, claim, call.id));
    const auditSql = auditInsert(events, s.params.length + 1);
    s.params.push(...auditSql.params);
    await this.dataSource.query(s.finish(auditSql.sql), s.params);
  }

  /** A call that waits for approval, with its approval and audit events, in one statement. */
  async insertPending(
    call: NewCall,
    approval: { id: string; reason: ApprovalReason; expiresAt: Date; awaitingRequester: boolean },
    events: AuditEventInput[],
    claim?: ClaimCompletion,
  ): Promise<void> {
    const s = new Statement();
    s.with(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
         status, approval_id, approval_expires_at, awaiting_requester, requested_by, created_at)
       VALUES (${[
         call.id, call.orgId, call.agentId, call.version, call.tool, call.capabilityId, call.toolId, call.runId, call.entryPoint,
       ].map((v) => s.param(v)).join(', ')}, ${s.param(JSON.stringify(call.arguments))}::jsonb, ${s.param(call.argumentsHash)},
         'pending_approval', ${s.param(approval.id)}, ${s.param(approval.expiresAt)}, ${s.param(approval.awaitingRequester)},
         ${s.param(call.requestedBy)}, ${s.param(call.createdAt)})
       RETURNING id`,
    );
    s.with(
      `INSERT INTO approval (id, org_id, tool_call_id, agent_id, version, tool, capability_id, tool_id, arguments_hash, reason, status,
         requested_by, expires_at, created_at)
       SELECT ${s.param(approval.id)}::uuid, ${s.param(call.orgId)}::uuid, w0.id, ${s.param(call.agentId)}::uuid, ${s.param(call.version)}::integer,
         ${s.param(call.tool)}, ${s.param(call.capabilityId)}, ${s.param(call.toolId)}, ${s.param(call.argumentsHash)}, ${s.param(approval.reason)},
         'pending', ${s.param(call.requestedBy)}::uuid, ${s.param(approval.expiresAt)}::timestamptz, ${s.param(call.createdAt)}::timestamptz
         FROM w0`,
    );
    if (claim) s.with(this.completeClaimSql(s, claim, call.id));
    const auditSql = auditInsert(events, s.params.length + 1);
    s.params.push(...auditSql.params);
    await this.dataSource.query(s.finish(auditSql.sql), s.params);
  }

  private completeClaimSql(s: Statement, claim: ClaimCompletion, callId: string): string {
    return `UPDATE idempotency_key SET status = 'done', tool_call_id = ${s.param(callId)}, response_status = ${s.param(claim.status)},
              response_body = ${s.param(JSON.stringify(claim.body))}::jsonb
             WHERE org_id = ${s.param(claim.orgId)} AND agent_id = ${s.param(claim.agentId)}::uuid AND key = ${s.param(claim.key)} AND claim_id = ${s.param(claim.claimId)}`;
  }

  /** The atomic reservation of one call of a limited run: false when the limit is reached. */
  /** Per agent: the same run id used with another agent is another run (issue 13). */
  async reserveRunCall(orgId: string, agentId: string, runId: string, limit: number): Promise<boolean> {
    if (limit < 1) return false;
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO tool_run_budget (org_id, agent_id, run_id, calls) VALUES ($1, $2, $3, 1)
       ON CONFLICT (org_id, agent_id, run_id) DO UPDATE SET calls = tool_run_budget.calls + 1, updated_at = now()
        WHERE tool_run_budget.calls < $4
       RETURNING calls`,
      [orgId, agentId, runId, limit],
    );
    return rows.length > 0;
  }

  async runCalls(orgId: string, agentId: string, runId: string): Promise<number> {
    const rows: { calls: number }[] = await this.dataSource.query(`SELECT calls FROM tool_run_budget WHERE org_id = $1 AND agent_id = $2 AND run_id = $3`, [
      orgId,
      agentId,
      runId,
    ]);
    return rows[0]?.calls ?? 0;
  }

  async recordEvents(events: AuditEventInput[]): Promise<void> {
    await this.dataSource.transaction((m) => this.audit.record(m, ...events));
  }

  async findCall(orgId: string, callId: string, manager: EntityManager | DataSource = this.dataSource): Promise<ToolCallRow | undefined> {
    const rows: ToolCallRow[] = await manager.query(`SELECT ${CALL_COLUMNS} FROM tool_call c WHERE c.org_id = $1 AND c.id = $2`, [orgId, callId]);
    return rows[0];
  }

  async findApproval(orgId: string, approvalId: string, manager: EntityManager | DataSource = this.dataSource): Promise<ApprovalRow | undefined> {
    const rows: ApprovalRow[] = await manager.query(
      `SELECT ${APPROVAL_COLUMNS} FROM approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id
        WHERE a.org_id = $1 AND a.id = $2`,
      [orgId, approvalId],
    );
    return rows[0];
  }

  /** The newest call of this requester, with these exact arguments, whose decision it has not been handed yet. */
  async findAwaiting(q: { orgId: string; agentId: string; version: number; capabilityId: string; toolId: string; requestedBy: string; argumentsHash: string }): Promise<ToolCallRow | undefined> {
    const rows: ToolCallRow[] = await this.dataSource.query(
      `SELECT ${CALL_COLUMNS} FROM tool_call c
        WHERE c.org_id = $1 AND c.agent_id = $2 AND c.requested_by = $3 AND c.arguments_hash = $4 AND c.awaiting_requester
          AND c.version = $5 AND c.capability_id = $6 AND c.tool_id = $7
        ORDER BY c.created_at DESC LIMIT 1`,
      [q.orgId, q.agentId, q.requestedBy, q.argumentsHash, q.version, q.capabilityId, q.toolId],
    );
    return rows[0];
  }

  /** Hands a settled call's decision to its requester, once. */
  async markDelivered(orgId: string, callId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE tool_call SET awaiting_requester = false
        WHERE org_id = $1 AND id = $2 AND awaiting_requester AND status NOT IN ('pending_approval', 'running')`,
      [orgId, callId],
    );
  }

  async listCalls(orgId: string, q: { agentId?: string; status?: ToolCallStatus; runId?: string; limit?: number; cursor?: string }): Promise<Page<ToolCallView>> {
    const limit = q.limit ?? DEFAULT_LIMIT;
    const where = ['c.org_id = $1'];
    const params: unknown[] = [orgId];
    const add = (sql: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (q.agentId) add((p) => `c.agent_id = ${p}`, q.agentId);
    if (q.runId) add((p) => `c.run_id = ${p}`, q.runId);
    if (q.status === 'expired') {
      where.push(`(c.status = 'expired' OR (c.status = 'pending_approval' AND c.approval_expires_at <= now()))`);
    } else if (q.status === 'pending_approval') {
      where.push(`c.status = 'pending_approval' AND c.approval_expires_at > now()`);
    } else if (q.status) {
      add((p) => `c.status = ${p}`, q.status);
    }
    const after = decodeCursor(q.cursor, ['timestamp', 'uuid']);
    if (after) {
      params.push(after[0], after[1]);
      where.push(`(c.created_at, c.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    const rows: ToolCallRow[] = await this.dataSource.query(
      `SELECT ${CALL_COLUMNS} FROM tool_call c WHERE ${where.join(' AND ')} ORDER BY c.created_at DESC, c.id DESC LIMIT $${params.length}`,
      params,
    );
    return pageOf(rows, limit, (r) => [iso(r.created_at), r.id], toToolCallView);
  }

  async listApprovals(orgId: string, q: { status?: ApprovalStatus; agentId?: string; limit?: number; cursor?: string }): Promise<Page<ApprovalView>> {
    const limit = q.limit ?? DEFAULT_LIMIT;
    const where = ['a.org_id = $1'];
    const params: unknown[] = [orgId];
    if (q.agentId) {
      params.push(q.agentId);
      where.push(`a.agent_id = $${params.length}`);
    }
    if (q.status === 'expired') {
      where.push(`(a.status = 'expired' OR (a.status = 'pending' AND a.expires_at <= now()))`);
    } else if (q.status === 'pending') {
      where.push(`a.status = 'pending' AND a.expires_at > now()`);
    } else if (q.status) {
      params.push(q.status);
      where.push(`a.status = $${params.length}`);
    }
    const after = decodeCursor(q.cursor, ['timestamp', 'uuid']);
    if (after) {
      params.push(after[0], after[1]);
      where.push(`(a.created_at, a.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    const rows: ApprovalRow[] = await this.dataSource.query(
      `SELECT ${APPROVAL_COLUMNS} FROM approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id
        WHERE ${where.join(' AND ')} ORDER BY a.created_at DESC, a.id DESC LIMIT $${params.length}`,
      params,
    );
    return pageOf(rows, limit, (r) => [iso(r.created_at), r.id], toApprovalView);
  }

  async findResult(orgId: string, callId: string): Promise<{ row: ToolCallRow; whole?: unknown } | undefined> {
    const row = await this.findCall(orgId, callId);
    if (!row) return undefined;
    if (!row.result_offloaded) return { row };
    const kept: { result: unknown }[] = await this.dataSource.query(
      `SELECT result FROM tool_call_result WHERE org_id = $1 AND tool_call_id = $2`,
      [orgId, callId],
    );
    return { row, whole: kept[0]?.result };
  }

  /**
   * The one conditional update that decides an approval. Only the transaction whose UPDATE matched
   * the pending row goes on; every simultaneous one matches nothing and learns why.
   */
  async decide(
    d: {
      orgId: string;
      approvalId: string;
      decidedBy: string;
      decidedAt: Date;
      note: string | null;
      outcome: 'approved' | 'rejected';
      approvedArguments?: { value: Record<string, unknown>; hash: string };
      leaseMs: number;
    },
    events: (approval: ApprovalRow) => AuditEventInput[],
  ): Promise<{ won: true; approval: ApprovalRow; call: ToolCallRow } | { won: false; why: 'decided' | 'expired' | 'missing' }> {
    const result = await this.dataSource.transaction(async (m) => {
      const [updated]: [{ id: string }[], number] = await m.query(
        `UPDATE approval SET status = $3, decided_by = $4, decided_at = $5, note = $6, approved_arguments = $7::jsonb, approved_arguments_hash = $8
          WHERE org_id = $1 AND id = $2 AND status = 'pending' AND expires_at > now()
          RETURNING id`,
        [d.orgId, d.approvalId, d.outcome, d.decidedBy, d.decidedAt, d.note,
          d.approvedArguments ? JSON.stringify(d.approvedArguments.value) : null, d.approvedArguments?.hash ?? null],
      );
      if (updated.length === 0) {
        const now: { status: string; expired: boolean }[] = await m.query(
          `SELECT status, status = 'pending' AND expires_at <= now() AS expired FROM approval WHERE org_id = $1 AND id = $2`,
          [d.orgId, d.approvalId],
        );
        if (now.length === 0) return { won: false as const, why: 'missing' as const };
        if (now[0].expired || now[0].status === 'expired') return { won: false as const, why: 'expired' as const };
        return { won: false as const, why: 'decided' as const };
      }
      const approval = (await this.findApproval(d.orgId, d.approvalId, m))!;
      if (d.outcome === 'approved') {
        await m.query(
          `UPDATE tool_call SET status = 'running', started_at = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
                  executed_arguments = $5::jsonb, executed_arguments_hash = $6
            WHERE org_id = $1 AND id = $2 AND status = 'pending_approval'`,
          [d.orgId, approval.tool_call_id, d.decidedAt, d.leaseMs,
            d.approvedArguments ? JSON.stringify(d.approvedArguments.value) : null, d.approvedArguments?.hash ?? null],
        );
      } else {
        await m.query(
          `UPDATE tool_call SET status = 'rejected', error_code = 'approval_rejected', error_message = $3, completed_at = $4
            WHERE org_id = $1 AND id = $2 AND status = 'pending_approval'`,
          [d.orgId, approval.tool_call_id, d.note, d.decidedAt],
        );
      }
      await this.audit.record(m, ...events(approval));
      const call = (await this.findCall(d.orgId, approval.tool_call_id, m))!;
      return { won: true as const, approval, call };
    });
    return result;
  }

  /**
   * Writes the outcome of an approved call that was running. When the sweeper got there first (the
   * lease ran out), its `interrupted` stands and nothing is written: the answer is what is stored.
   */
  async settleRunning(orgId: string, callId: string, settlement: Settlement, completedAt: Date, events: (call: ToolCallRow) => AuditEventInput[]): Promise<ToolCallRow> {
    return this.dataSource.transaction(async (m) => {
      const ok = settlement.status === 'succeeded';
      const [updated]: [{ id: string }[], number] = await m.query(
        `UPDATE tool_call SET status = $3, result = $4::jsonb, result_truncated = $5, result_offloaded = $6, error_code = $7, error_message = $8,
                completed_at = $9, lease_expires_at = NULL
          WHERE org_id = $1 AND id = $2 AND status = 'running'
          RETURNING id`,
        [orgId, callId, settlement.status, ok ? JSON.stringify(settlement.result) : null, ok && settlement.truncated,
          ok && settlement.offloaded !== undefined, ok ? null : settlement.error.code, ok ? null : settlement.error.message, completedAt],
      );
      const call = (await this.findCall(orgId, callId, m))!;
      if (updated.length === 0) return call;
      if (ok && settlement.offloaded) {
        await m.query(`INSERT INTO tool_call_result (tool_call_id, org_id, result, tokens) VALUES ($1, $2, $3::jsonb, $4)`, [
          callId, orgId, JSON.stringify(settlement.offloaded.result), settlement.offloaded.tokens,
        ]);
      }
      await this.audit.record(m, ...events(call));
      return call;
    });
  }

  /**
   * Marks pending approvals past their expiry (all, or the given ones) and their calls `expired`,
   * with an `approval.expired` event each. Returns the expired approvals' call ids.
   */
  async expireApprovals(ids?: string[], batch = 500): Promise<{ orgId: string; callId: string }[]> {
    return this.dataSource.transaction(async (m) => {
      const [rows]: [{ id: string; org_id: string; tool_call_id: string; arguments_hash: string; expires_at: Date }[], number] = await m.query(
        `UPDATE approval SET status = 'expired'
          WHERE id IN (SELECT id FROM approval WHERE status = 'pending' AND expires_at <= now() ${ids ? 'AND id = ANY($2::uuid[])' : ''}
                        ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
            AND status = 'pending'
          RETURNING id, org_id, tool_call_id, arguments_hash, expires_at`,
        ids ? [batch, ids] : [batch],
      );
      if (rows.length === 0) return [];
      await m.query(
        `UPDATE tool_call SET status = 'expired', error_code = 'approval_expired', error_message = $2, completed_at = approval_expires_at
          WHERE id = ANY($1::uuid[]) AND status = 'pending_approval'`,
        [rows.map((r) => r.tool_call_id), EXPIRED_MESSAGE],
      );
      await this.audit.record(
        m,
        ...rows.map((r) => ({
          type: 'approval.expired' as const,
          orgId: r.org_id,
          actor: SYSTEM_ACTOR,
          target: { type: 'approval', id: r.id },
          data: { toolCallId: r.tool_call_id, argumentsHash: r.arguments_hash, expiresAt: iso(r.expires_at) },
        })),
      );
      return rows.map((r) => ({ orgId: r.org_id, callId: r.tool_call_id }));
    });
  }

  /**
   * Calls left `running` past their lease: the process that ran them died. They become `failed`
   * with code `interrupted` and are never run again by themselves.
   */
  async interruptAbandoned(batch = 500): Promise<{ orgId: string; callId: string }[]> {
    return this.dataSource.transaction(async (m) => {
      const [rows]: [{ id: string; org_id: string; arguments_hash: string; executed_arguments_hash: string | null; agent_id: string; tool: string }[], number] =
        await m.query(
          `UPDATE tool_call SET status = 'failed', error_code = 'interrupted', error_message = $2, completed_at = now(), lease_expires_at = NULL
            WHERE id IN (SELECT id FROM tool_call WHERE status = 'running' AND lease_expires_at <= now()
                          ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
              AND status = 'running'
            RETURNING id, org_id, arguments_hash, executed_arguments_hash, agent_id, tool`,
          [batch, INTERRUPTED_MESSAGE],
        );
      if (rows.length === 0) return [];
      await this.audit.record(
        m,
        ...rows.map((r) => ({
          type: 'tool_call.failed' as const,
          orgId: r.org_id,
          actor: SYSTEM_ACTOR,
          target: { type: 'tool_call', id: r.id },
          data: { agentId: r.agent_id, tool: r.tool, argumentsHash: r.executed_arguments_hash ?? r.arguments_hash, error: { code: 'interrupted' } },
        })),
      );
      return rows.map((r) => ({ orgId: r.org_id, callId: r.id }));
    });
  }

  async deleteExpiredKeys(batch = 1000): Promise<number> {
    const [, count]: [unknown[], number] = await this.dataSource.query(
      `DELETE FROM idempotency_key WHERE (org_id, agent_id, key) IN (SELECT org_id, agent_id, key FROM idempotency_key WHERE expires_at <= now() LIMIT $1)`,
      [batch],
    );
    return count;
  }
}
