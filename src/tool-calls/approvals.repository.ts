import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf } from '../common/pagination';
import { APPROVAL_COLUMNS, ApprovalRow, iso, Queryable, toApprovalView, ToolCallRow } from './tool-call-rows';
import { findCallWith } from './tool-calls.repository';
import type { ApprovalStatus, ApprovalView } from './tool-calls.dto';

/** Reads an approval (with its call's arguments) with the given manager. */
export async function findApprovalWith(manager: Queryable, orgId: string, approvalId: string): Promise<ApprovalRow | undefined> {
  const rows: ApprovalRow[] = await manager.query(
    `SELECT ${APPROVAL_COLUMNS} FROM approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id
      WHERE a.org_id = $1 AND a.id = $2`,
    [orgId, approvalId],
  );
  return rows[0];
}

/** The statements about approvals: reading them, and the one conditional update that decides one. */
@Injectable()
export class ApprovalsRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async findApproval(orgId: string, approvalId: string): Promise<ApprovalRow | undefined> {
    return findApprovalWith(this.dataSource, orgId, approvalId);
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
        [
          d.orgId,
          d.approvalId,
          d.outcome,
          d.decidedBy,
          d.decidedAt,
          d.note,
          d.approvedArguments ? JSON.stringify(d.approvedArguments.value) : null,
          d.approvedArguments?.hash ?? null,
        ],
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
      const approval = (await findApprovalWith(m, d.orgId, d.approvalId))!;
      if (d.outcome === 'approved') {
        await m.query(
          `UPDATE tool_call SET status = 'running', started_at = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
                  executed_arguments = $5::jsonb, executed_arguments_hash = $6
            WHERE org_id = $1 AND id = $2 AND status = 'pending_approval'`,
          [
            d.orgId,
            approval.tool_call_id,
            d.decidedAt,
            d.leaseMs,
            d.approvedArguments ? JSON.stringify(d.approvedArguments.value) : null,
            d.approvedArguments?.hash ?? null,
          ],
        );
      } else {
        await m.query(
          `UPDATE tool_call SET status = 'rejected', error_code = 'approval_rejected', error_message = $3, completed_at = $4
            WHERE org_id = $1 AND id = $2 AND status = 'pending_approval'`,
          [d.orgId, approval.tool_call_id, d.note, d.decidedAt],
        );
      }
      await this.audit.record(m, ...events(approval));
      const call = (await findCallWith(m, d.orgId, approval.tool_call_id))!;
      return { won: true as const, approval, call };
    });
    return result;
  }
}

/**
 * How many approvals wait for a decision across every organization, and how long the oldest has
 * waited (seconds): an operator's figure for the metrics scrape, served by the partial index on
 * pending approvals. A function so the metrics module can ask it without the runtime's module.
 */
export async function pendingApprovalsSummary(db: Pick<DataSource, 'query'>): Promise<{ n: number; oldest: number }> {
  const [row]: { n: number; oldest: number }[] = await db.query(
    `SELECT count(*)::int AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
       FROM approval WHERE status = 'pending'`,
  );
  return row;
}
