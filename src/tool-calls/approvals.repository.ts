import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { auditInsertWhen } from '../audit/audit.repository';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { Statement } from '../database/statement';
import { GovernanceFacts, missingScopes, toolKey } from '../runtime/tool-policy';
import { holdAuthority } from '../auth/api-keys.repository';
import { liveKeyCondition } from '../database/live-key';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf } from '../common/pagination';
import { rowsWithinBudget } from '../database/keyset-page';
import { EXPIRED_APPROVALS, listPageSql } from '../database/expired-page';
import { APPROVAL_COLUMNS, ApprovalRow, CALL_COLUMNS, iso, Queryable, toApprovalView, ToolCallRow } from './tool-call-rows';
import { findCallWith } from './tool-calls.repository';
import { holdSwitches } from '../governance/governance.repository';
import type { ApprovalStatus, ApprovalView } from './tool-calls.dto';

/** A `run_id` that can name one of our runs (free text on a REST or MCP call). */
const UUID_TEXT = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** How a decision is made: by whom, when, and what it says. */
export interface Decision {
  /** null: nobody decided; the platform settled it (the key that started its run was revoked). */
  decidedBy: string | null;
  decidedAt: Date;
  note: string | null;
  outcome: 'approved' | 'rejected';
  approvedArguments?: { value: Record<string, unknown>; hash: string };
  leaseMs: number;
  /** Approving: the deciding API key (null for a person) and the scopes the tool needs, both held while it decides (holdAuthority). */
  authority?: { keyId: string | null; scopes: readonly string[] };
}
type Won = { won: true; approval: ApprovalRow; call: ToolCallRow };
/** An approval `rejectOfRuns` rejected, with what its audit event names. */
export interface RunRejection {
  approvalId: string;
  toolCallId: string;
  argumentsHash: string;
  createdAt: Date;
  runId: string;
  note: string;
}
type Lost = { won: false; why: 'decided' | 'expired' | 'missing' };
/** Approving refused: a switch committed before the decision could; the approval is still pending. */
type Switched = { won: false; why: 'switched'; facts: GovernanceFacts };
/** Approving refused, still pending: the deciding key was revoked, or the organization lost a scope the tool needs (its scopes now). */
type Unauthorized = { won: false; why: 'revoked' } | { won: false; why: 'scope_removed'; scopes: string[] } | { won: false; why: 'run_key_gone' };

/** Reads an approval (with its call's arguments) with the given manager. */
export async function findApprovalWith(manager: Queryable, orgId: string, approvalId: string): Promise<ApprovalRow | undefined> {
  const rows: ApprovalRow[] = await manager.query(
    `SELECT ${APPROVAL_COLUMNS} FROM approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id
      WHERE a.org_id = $1 AND a.id = $2`,
    [orgId, approvalId],
  );
  return rows[0];
}

/** The statements about approvals: reading them, and the one conditional statement that decides one. */
@Injectable()
export class ApprovalsRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async findApproval(orgId: string, approvalId: string, db: Queryable = this.dataSource): Promise<ApprovalRow | undefined> {
    return findApprovalWith(db, orgId, approvalId);
  }

  async listApprovals(orgId: string, q: { status?: ApprovalStatus; agentId?: string; limit?: number; cursor?: string }): Promise<Page<ApprovalView>> {
    const limit = q.limit ?? DEFAULT_LIMIT;
    const where = ['a.org_id = $1'];
    const params: unknown[] = [orgId];
    if (q.agentId) {
      params.push(q.agentId);
      where.push(`a.agent_id = $${params.length}`);
    }
    // `expired`: two branches, each through an index (listPageSql).
    if (q.status === 'pending') {
      where.push(`a.status = 'pending' AND a.expires_at > now()`);
    } else if (q.status && q.status !== 'expired') {
      params.push(q.status);
      where.push(`a.status = $${params.length}`);
    }
    const after = decodeCursor(q.cursor, ['timestamp', 'uuid']);
    if (after) {
      params.push(after[0], after[1]);
      where.push(`(a.created_at, a.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    const select = `${APPROVAL_COLUMNS}, c.arguments_bytes, a.approved_arguments_bytes`;
    const from = 'approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id';
    const order = 'a.created_at DESC, a.id DESC';
    const { rows, found } = await rowsWithinBudget<ApprovalRow>(this.dataSource, {
      text: listPageSql({ select, from, where, order, limit: `$${params.length}`, expired: q.status === 'expired' ? EXPIRED_APPROVALS : undefined }),
      params,
      order: 'created_at DESC, id DESC',
      bytes: ['w.arguments_bytes', 'w.approved_arguments_bytes', 'octet_length(w.note)'],
    });
    return pageOf(rows, limit, (r) => [iso(r.created_at), r.id], toApprovalView, undefined, found);
  }

  /**
   * An approval about to be decided, with the incident-response switches of its tool and version
   * (GovernanceRepository.factsFor's answer) in the same query: approving reads the database once
   * before it decides.
   */
  async findDecidable(orgId: string, approvalId: string): Promise<{ row: ApprovalRow; facts: GovernanceFacts } | undefined> {
    const rows: (ApprovalRow & { version_retired: boolean; disabled: boolean; disabled_reason: string | null })[] = await this.dataSource.query(
      `SELECT ${APPROVAL_COLUMNS},
              EXISTS (SELECT 1 FROM agent_version_retirement r
                       WHERE r.org_id = a.org_id AND r.agent_id = a.agent_id AND r.version = a.version) AS version_retired,
              d.tool_id IS NOT NULL AS disabled, d.reason AS disabled_reason
         FROM approval a JOIN tool_call c ON c.id = a.tool_call_id AND c.org_id = a.org_id
         LEFT JOIN tool_disabled d ON d.org_id = a.org_id AND d.capability_id = a.capability_id AND d.tool_id = a.tool_id
        WHERE a.org_id = $1 AND a.id = $2`,
      [orgId, approvalId],
    );
    if (!rows[0]) return undefined;
    const { version_retired, disabled, disabled_reason, ...row } = rows[0];
    return {
      row,
      facts: {
        versionRetired: version_retired,
        disabledTools: disabled ? new Map([[toolKey(row.capability_id, row.tool_id), { reason: disabled_reason }]]) : new Map(),
      },
    };
  }

  /**
   * The one conditional update that decides an approval, in ONE statement with the call's change
   * and the decision's audit events (data-modifying CTEs): only the request whose UPDATE matched
   * the pending row changes anything; every simultaneous one matches nothing, writes nothing, and
   * learns why from the same statement. `approval` is the row as read before (what the events
   * and the answer are made of: nothing a decision changes but its own fields). Approving also
   * holds the organization's switches (holdSwitches) and matches only while neither its version
   * is retired nor its tool disabled: `switched` answers the switches it found, still pending.
   */
  async decide(approval: ApprovalRow, d: Decision & { outcome: 'rejected' }, events: AuditEventInput[], db?: Queryable): Promise<Won | Lost>;
  async decide(approval: ApprovalRow, d: Decision, events: AuditEventInput[], db?: Queryable): Promise<Won | Lost | Switched | Unauthorized>;
  async decide(
    approval: ApprovalRow,
    d: Decision,
    events: AuditEventInput[],
    /** A transaction's manager, to decide with a change it belongs to (the revocation of a key). */
    db: Queryable = this.dataSource,
  ): Promise<Won | Lost | Switched | Unauthorized> {
    const s = new Statement();
    const org = s.param(approval.org_id);
    const id = s.param(approval.id);
    const at = s.param(d.decidedAt);
    const note = s.param(d.note);
    const args = s.param(d.approvedArguments ? JSON.stringify(d.approvedArguments.value) : null);
    const hash = s.param(d.approvedArguments?.hash ?? null);
    const approving = d.outcome === 'approved';
    // Parameters only an approval uses: PostgreSQL cannot type a parameter no statement uses.
    const retired = approving
      ? `EXISTS (SELECT 1 FROM agent_version_retirement r
                  WHERE r.org_id = ${org} AND r.agent_id = ${s.param(approval.agent_id)} AND r.version = ${s.param(approval.version)})`
      : '';
    const disabled = approving ? `t.org_id = ${org} AND t.capability_id = ${s.param(approval.capability_id)} AND t.tool_id = ${s.param(approval.tool_id)}` : '';
    // A run's call whose run ended (cancelled, or its key revoked) runs for nobody: approving it is
    // refused like a decided one. Those ends reject the run's approvals in their own transaction;
    // this holds for whatever else is left pending.
    const callId = approving ? s.param(approval.tool_call_id) : '';
    const ownRun = (where: string) =>
      `EXISTS (SELECT 1 FROM tool_call rc JOIN run r ON r.org_id = rc.org_id AND r.id = CASE WHEN rc.run_id ~ '${UUID_TEXT}' THEN rc.run_id::uuid END
                WHERE rc.org_id = ${org} AND rc.id = ${callId}::uuid AND rc.entry_point = 'run' AND ${where})`;
    // Nothing ends a run when its key expires (a revocation does): approved, its call would run for a key no longer accepted (V-F2).
    const keyGone = `NOT EXISTS (SELECT 1 FROM api_key k WHERE k.org_id = r.org_id AND k.id = r.requested_by AND ${liveKeyCondition('k')})`;
    const runKeyGone = approving ? ownRun(`r.status IN ('running', 'waiting_for_approval') AND ${keyGone}`) : '';
    const runEnded = approving ? ownRun(`(r.status NOT IN ('running', 'waiting_for_approval') OR ${keyGone})`) : '';
    s.with(
      `UPDATE approval SET status = ${s.param(d.outcome)}, decided_by = ${s.param(d.decidedBy)}, decided_at = ${at}, note = ${note},
              approved_arguments = ${args}::jsonb, approved_arguments_hash = ${hash}
        WHERE org_id = ${org} AND id = ${id} AND status = 'pending' AND expires_at > now()
          ${approving ? `AND NOT ${retired} AND NOT EXISTS (SELECT 1 FROM tool_disabled t WHERE ${disabled}) AND NOT ${runEnded}` : ''}
        RETURNING tool_call_id`,
    );
    s.with(
      approving
        ? `UPDATE tool_call c SET status = 'running', started_at = ${at},
                  lease_expires_at = now() + make_interval(secs => ${s.param(d.leaseMs)}::double precision / 1000),
                  executed_arguments = ${args}::jsonb, executed_arguments_hash = ${hash}
             FROM w0 WHERE c.org_id = ${org} AND c.id = w0.tool_call_id AND c.status = 'pending_approval'
           RETURNING c.*`
        : `UPDATE tool_call c SET status = 'rejected', error_code = 'approval_rejected', error_message = ${note}, completed_at = ${at}
             FROM w0 WHERE c.org_id = ${org} AND c.id = w0.tool_call_id AND c.status = 'pending_approval'
           RETURNING c.*`,
    );
    const audit = auditInsertWhen(events, s.params.length + 1, 'EXISTS (SELECT 1 FROM w0)');
    s.params.push(...audit.params);
    s.with(audit.sql);
    // The approval as this statement's snapshot saw it, for a loser's reason: a decision another
    // request committed meanwhile still reads `pending` here, and "decided" is then the answer.
    const sql = s.finish(
      `SELECT (SELECT count(*) FROM w0)::integer AS won, st.status AS approval_status, st.expired AS approval_expired,
              ${approving ? `${retired} AS version_retired, t.tool_id IS NOT NULL AS disabled, t.reason AS disabled_reason, ${runKeyGone} AS run_key_gone,` : ''} ${CALL_COLUMNS}
         FROM (SELECT 1) one
         LEFT JOIN w1 c ON true
         LEFT JOIN LATERAL (SELECT status, status = 'pending' AND expires_at <= now() AS expired
                              FROM approval WHERE org_id = ${org} AND id = ${id}) st ON true
         ${approving ? `LEFT JOIN tool_disabled t ON ${disabled}` : ''}`,
    );
    type Result = ToolCallRow & { won: number; approval_status: string | null; approval_expired: boolean | null };
    type Switches = { version_retired?: boolean; disabled?: boolean; disabled_reason?: string | null; run_key_gone?: boolean };
    const held: (Result & Switches)[] | Unauthorized = approving
      ? await this.underSwitches(db, approval.org_id, d.authority, (m) => m.query(sql, s.params))
      : await db.query(sql, s.params);
    if (!Array.isArray(held)) return held;
    const [result] = held;
    const { version_retired, disabled: off, disabled_reason, run_key_gone, ...rest } = result;
    if (!rest.won && rest.approval_status === 'pending' && !rest.approval_expired && run_key_gone) return { won: false, why: 'run_key_gone' };
    if (!rest.won && rest.approval_status === 'pending' && !rest.approval_expired && (version_retired || off)) {
      const key = toolKey(approval.capability_id, approval.tool_id);
      const disabledTools = off ? new Map([[key, { reason: disabled_reason ?? null }]]) : new Map<string, { reason: string | null }>();
      return { won: false, why: 'switched', facts: { versionRetired: Boolean(version_retired), disabledTools } };
    }
    return this.outcomeOf(approval, d, events, rest, db);
  }

  /**
   * Rejects, with `m` (the revocation of the key that started their runs), these approvals of runs'
   * own calls, which the caller locked (failRunsOfKey): what `decide` does for one, for all of them
   * in two statements. A decision each (a read and a statement, with a listing of each run's calls)
   * kept 1,500 runs' revocation open 11 s, the key still accepted. Each note names its call's run:
   * `notePrefix` + the run's id + `noteSuffix`. Ids go in as arrays, matched by primary key.
   */
  async rejectOfRuns(m: Queryable, orgId: string, approvalIds: readonly string[], note: { prefix: string; suffix: string }, at: Date): Promise<RunRejection[]> {
    if (approvalIds.length === 0) return [];
    // An UPDATE answers [rows, count] through TypeORM.
    const [rejected]: [RunRejection[], number] = await m.query(
      `UPDATE approval a SET status = 'rejected', decided_by = NULL, decided_at = $5, note = $3 || c.run_id || $4,
              approved_arguments = NULL, approved_arguments_hash = NULL
         FROM tool_call c
        WHERE a.org_id = $1 AND a.id = ANY ($2::uuid[]) AND a.status = 'pending' AND a.expires_at > now()
          AND c.org_id = a.org_id AND c.id = a.tool_call_id
        RETURNING a.id AS "approvalId", a.tool_call_id AS "toolCallId", a.arguments_hash AS "argumentsHash", a.created_at AS "createdAt",
                  c.run_id AS "runId", a.note`,
      [orgId, approvalIds, note.prefix, note.suffix, at],
    );
    if (rejected.length === 0) return [];
    await m.query(
      `UPDATE tool_call SET status = 'rejected', error_code = 'approval_rejected', error_message = $3 || run_id || $4, completed_at = $5
        WHERE org_id = $1 AND id = ANY ($2::uuid[]) AND status = 'pending_approval'`,
      [orgId, rejected.map((r) => r.toolCallId), note.prefix, note.suffix, at],
    );
    return rejected;
  }

  /**
   * `decide` in a transaction that holds the organization's switches first (`db`'s, when it is one
   * already), then the authority the decision was asked with (holdAuthority): the scopes and the key
   * as they are now, not as they were when the request arrived.
   */
  private async underSwitches<T>(db: Queryable, orgId: string, authority: Decision['authority'], run: (m: Queryable) => Promise<T>): Promise<T | Unauthorized> {
    const decide = async (m: Queryable): Promise<T | Unauthorized> => {
      await holdSwitches(m, orgId, 'decision');
      if (authority) {
        const now = await holdAuthority(m, orgId, authority.keyId);
        if (!now || (authority.keyId !== null && !now.keyLive)) return { won: false, why: 'revoked' };
        if (missingScopes(authority.scopes, now.scopes).length > 0) return { won: false, why: 'scope_removed', scopes: now.scopes };
      }
      return run(m);
    };
    return db !== this.dataSource ? decide(db) : this.dataSource.transaction(decide);
  }

  private async outcomeOf(
    approval: ApprovalRow,
    d: Decision,
    events: AuditEventInput[],
    result: ToolCallRow & { won: number; approval_status: string | null; approval_expired: boolean | null },
    db: Queryable,
  ): Promise<Won | Lost> {
    const { won, approval_status, approval_expired, ...call } = result;
    if (!won) {
      if (approval_status === null) return { won: false, why: 'missing' };
      return { won: false, why: approval_expired || approval_status === 'expired' ? 'expired' : 'decided' };
    }
    this.audit.committed(events);
    const decided: ApprovalRow = {
      ...approval,
      status: d.outcome,
      decided_by: d.decidedBy,
      decided_at: d.decidedAt,
      note: d.note,
      approved_arguments: d.approvedArguments?.value ?? null,
      approved_arguments_hash: d.approvedArguments?.hash ?? null,
    };
    // The call moves with its approval; were it ever not pending, the answer is the call as it is.
    const row = call.id ? (call as ToolCallRow) : (await findCallWith(db, approval.org_id, approval.tool_call_id))!;
    return { won: true, approval: decided, call: row };
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
