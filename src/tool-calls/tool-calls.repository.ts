import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { auditInsert, auditInsertWhen } from '../audit/audit.repository';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf } from '../common/pagination';
import { rowsWithinBudget } from '../database/keyset-page';
import { EXPIRED_CALLS, listPageSql } from '../database/expired-page';
import { GroupCommit } from '../database/batcher';
import { Statement } from '../database/statement';
import { CallTransaction } from './call-transaction';
import { claimTakenOver, completeClaimSql, heldClaimSql } from './idempotency.repository';
import { CallFilter, ClaimCompletion, CALL_COLUMNS, iso, Queryable, NewCall, Settlement, ToolCallRow, toToolCallView } from './tool-call-rows';
import type { ApprovalReason, ToolCallView } from './tool-calls.dto';

export * from './tool-call-rows';

/** Reads a call with the given manager (inside a transaction, or not). */
export async function findCallWith(manager: Queryable, orgId: string, callId: string): Promise<ToolCallRow | undefined> {
  const rows: ToolCallRow[] = await manager.query(`SELECT ${CALL_COLUMNS} FROM tool_call c WHERE c.org_id = $1 AND c.id = $2`, [orgId, callId]);
  return rows[0];
}

type FoundResult = { row: ToolCallRow; wholeText?: string | null };

/** Calls one group commit writes at most (21 parameters each, and their events'). */
const SETTLED_BATCH_MAX = 64;

interface SettledWrite {
  call: NewCall;
  settlement: Settlement;
  completedAt: Date;
  events: AuditEventInput[];
  claim?: ClaimCompletion;
}

/**
 * The statements about tool calls: recording a call (with its approval, its audit events and its
 * idempotency answer, in one statement), settling it, the run budget, and reading calls. Each
 * method is one statement or one transaction, and never awaits anything but its own transaction's
 * queries (the embedded database has one connection).
 */
@Injectable()
export class ToolCallsRepository {
  constructor(
    readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * A call that ran without approval: the call, its whole result when offloaded, its audit events
   * and the idempotency answer, in ONE statement (the governed hot path's only write), shared with
   * the calls that finished during the previous write's round trip (group commit, see
   * GroupCommit): one statement and one commit for all of them. It returns once its rows are
   * committed.
   */
  insertSettled(call: NewCall, settlement: Settlement, completedAt: Date, events: AuditEventInput[], claim?: ClaimCompletion): Promise<void> {
    return this.settledWrites.submit({ call, settlement, completedAt, events, claim });
  }

  private readonly settledWrites = new GroupCommit<SettledWrite>((writes) => this.writeSettled(writes), {
    maxBatch: SETTLED_BATCH_MAX,
    maxInFlight: 1,
  });

  private async writeSettled(writes: SettledWrite[]): Promise<void> {
    const s = new Statement();
    const rows = writes.map(({ call, settlement, completedAt }) => {
      const ok = settlement.status === 'succeeded';
      return `(${[call.id, call.orgId, call.agentId, call.version, call.tool, call.capabilityId, call.toolId, call.runId, call.entryPoint]
        .map((v) => s.param(v))
        .join(', ')}, ${s.param(JSON.stringify(call.arguments))}::jsonb, ${s.param(call.argumentsHash)},
         ${s.param(settlement.status)}, ${s.param(ok ? (settlement.json ?? JSON.stringify(settlement.result)) : null)}::jsonb,
         ${s.param(ok && settlement.truncated)}, ${s.param(ok && settlement.offloaded !== undefined)},
         ${s.param(ok ? null : settlement.error.code)}, ${s.param(ok ? null : settlement.error.message)},
         ${s.param(call.requestedBy)}, ${s.param(call.createdAt)}, ${s.param(call.createdAt)}, ${s.param(completedAt)})`;
    });
    s.with(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
         status, result, result_truncated, result_offloaded, error_code, error_message, requested_by, created_at, started_at, completed_at)
       VALUES ${rows.join(', ')}
       RETURNING id`,
    );
    for (const { call, settlement, claim } of writes) {
      if (settlement.status === 'succeeded' && settlement.offloaded) {
        s.with(
          `INSERT INTO tool_call_result (tool_call_id, org_id, result, tokens)
           SELECT w0.id, ${s.param(call.orgId)}::uuid, ${s.param(settlement.offloaded.json)}::jsonb, ${s.param(settlement.offloaded.tokens)}::integer
             FROM w0 WHERE w0.id = ${s.param(call.id)}::uuid`,
        );
      }
      if (claim) s.with(completeClaimSql(s, claim, call.id));
    }
    const events = writes.flatMap((w) => w.events);
    const auditSql = auditInsert(events, s.params.length + 1);
    s.params.push(...auditSql.params);
    await this.dataSource.query(s.finish(auditSql.sql), s.params);
    this.audit.committed(events);
  }

  /** A call that waits for approval, with its approval and audit events, in one statement (through `m`); a run's call only while its run has
   * not ended, under a share lock of the run's row (a cancel committed first wins; one after waits, then rejects it). False: nothing written.
   * With `claim`, only while it is still this request's (locked): one that lapsed and a retry took over records nothing (W-F2). */
  async insertPending(
    call: NewCall,
    approval: { id: string; reason: ApprovalReason; expiresAt: Date; awaitingRequester: boolean },
    events: AuditEventInput[],
    claim?: ClaimCompletion,
    m: EntityManager = this.dataSource.manager,
  ): Promise<boolean> {
    const s = new Statement();
    const org = s.param(call.orgId);
    const run = call.entryPoint === 'run' && call.runId !== null ? s.param(call.runId) : undefined;
    const live = run
      ? `AND EXISTS (SELECT 1 FROM run r WHERE r.org_id = ${org}::uuid AND r.id = ${run}::uuid AND r.status IN ('running', 'waiting_for_approval') FOR SHARE OF r)`
      : '';
    s.with(claim ? `${heldClaimSql(s, claim)} FOR UPDATE` : 'SELECT 1');
    s.with(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
         status, approval_id, approval_expires_at, awaiting_requester, requested_by, created_at)
       SELECT ${s.param(call.id)}::uuid, ${org}::uuid, ${s.param(call.agentId)}::uuid, ${s.param(call.version)}::integer,
         ${[call.tool, call.capabilityId, call.toolId, call.runId, call.entryPoint].map((v) => `${s.param(v)}::text`).join(', ')},
         ${s.param(JSON.stringify(call.arguments))}::jsonb, ${s.param(call.argumentsHash)}::text,
         'pending_approval', ${s.param(approval.id)}::uuid, ${s.param(approval.expiresAt)}::timestamptz, ${s.param(approval.awaitingRequester)}::boolean,
         ${s.param(call.requestedBy)}::uuid, ${s.param(call.createdAt)}::timestamptz
       WHERE EXISTS (SELECT 1 FROM w0) ${live}
       RETURNING id`,
    );
    s.with(
      `INSERT INTO approval (id, org_id, tool_call_id, agent_id, version, tool, capability_id, tool_id, arguments_hash, reason, status,
         requested_by, expires_at, created_at)
       SELECT ${s.param(approval.id)}::uuid, ${org}::uuid, w1.id, ${s.param(call.agentId)}::uuid, ${s.param(call.version)}::integer,
         ${s.param(call.tool)}, ${s.param(call.capabilityId)}, ${s.param(call.toolId)}, ${s.param(call.argumentsHash)}, ${s.param(approval.reason)},
         'pending', ${s.param(call.requestedBy)}::uuid, ${s.param(approval.expiresAt)}::timestamptz, ${s.param(call.createdAt)}::timestamptz
         FROM w1`,
    );
    if (claim) s.with(`${completeClaimSql(s, claim, call.id)} AND EXISTS (SELECT 1 FROM w1)`);
    const auditSql = auditInsertWhen(events, s.params.length + 1, 'EXISTS (SELECT 1 FROM w1)');
    s.params.push(...auditSql.params);
    if (events.length > 0) s.with(auditSql.sql);
    const last = `SELECT (SELECT count(*) FROM w1)::integer AS n, EXISTS (SELECT 1 FROM w0) AS held`;
    const [{ n, held }]: { n: number; held: boolean }[] = await m.query(s.finish(last), s.params);
    if (n > 0) this.audit.committedWith(m, events);
    if (!held) throw claimTakenOver();
    return n > 0;
  }

  /** The status of a run of ours named by a call's `runId` (free text: only a UUID can name one); undefined when none. */
  async runStatus(orgId: string, runId: string): Promise<string | undefined> {
    const rows: { status: string }[] = await this.dataSource.query(
      `SELECT status FROM run WHERE org_id = $1 AND id = CASE WHEN $2 ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN $2::uuid END`,
      [orgId, runId],
    );
    return rows[0]?.status;
  }

  /** The atomic reservation of one call of a limited run, false when the limit is reached; per agent: the same run id with another agent is another run (issue 13). */
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

  async findCall(orgId: string, callId: string): Promise<ToolCallRow | undefined> {
    return findCallWith(this.dataSource, orgId, callId);
  }

  /** The newest call of this requester, with these exact arguments, whose decision it has not been handed yet. */
  async findAwaiting(q: {
    orgId: string;
    agentId: string;
    version: number;
    capabilityId: string;
    toolId: string;
    requestedBy: string;
    argumentsHash: string;
  }): Promise<ToolCallRow | undefined> {
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
  /** True when this request handed the outcome over; false when another had already. */
  async markDelivered(orgId: string, callId: string): Promise<boolean> {
    const [rows]: [unknown[], number] = await this.dataSource.query(
      `UPDATE tool_call SET awaiting_requester = false
        WHERE org_id = $1 AND id = $2 AND awaiting_requester AND status NOT IN ('pending_approval', 'running') RETURNING id`,
      [orgId, callId],
    );
    return rows.length > 0;
  }

  async listCalls(orgId: string, q: CallFilter, db: Queryable = this.dataSource): Promise<Page<ToolCallView>> {
    const limit = q.limit ?? DEFAULT_LIMIT;
    const where = ['c.org_id = $1'];
    const params: unknown[] = [orgId];
    const add = (sql: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (q.agentId) add((p) => `c.agent_id = ${p}`, q.agentId);
    if (q.agents) add((p) => `c.agent_id = ANY (${p}::uuid[])`, q.agents);
    if (q.runId) add((p) => `c.run_id = ${p}`, q.runId);
    if (q.entryPoint) add((p) => `c.entry_point = ${p}`, q.entryPoint);
    if (q.status === 'pending_approval') {
      where.push(`c.status = 'pending_approval' AND c.approval_expires_at > now()`);
    } else if (q.status && q.status !== 'expired') {
      add((p) => `c.status = ${p}`, q.status);
    }
    const after = decodeCursor(q.cursor, ['timestamp', 'uuid']);
    if (after) {
      params.push(after[0], after[1]);
      where.push(`(c.created_at, c.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    const select = `${CALL_COLUMNS}, c.arguments_bytes, c.executed_arguments_bytes, c.result_bytes`;
    const order = 'c.created_at DESC, c.id DESC'; // `expired`: two branches, each through an index (listPageSql)
    const { rows, found } = await rowsWithinBudget<ToolCallRow>(db, {
      text: listPageSql({ select, from: 'tool_call c', where, order, limit: `$${params.length}`, expired: q.status === 'expired' ? EXPIRED_CALLS : undefined }),
      params,
      order: 'created_at DESC, id DESC',
      bytes: ['w.arguments_bytes', 'w.executed_arguments_bytes', 'w.result_bytes', 'octet_length(w.error_message)'],
    });
    return pageOf(rows, limit, (r) => [iso(r.created_at), r.id], toToolCallView, undefined, found);
  }

  /** `agents`: a pinned key's (agentScopeOf); another agent's call is none. */
  async findResult(orgId: string, callId: string, maxBytes: number, agents?: readonly string[]): Promise<FoundResult | undefined> {
    const row = await this.findCall(orgId, callId);
    if (!row || (agents && !agents.includes(row.agent_id))) return undefined;
    if (!row.result_offloaded) return { row };
    const sql = `SELECT CASE WHEN octet_length(t) <= $3 THEN t END AS text FROM (SELECT result::text AS t FROM tool_call_result WHERE org_id = $1 AND tool_call_id = $2 OFFSET 0) r`;
    const kept: { text: string | null }[] = await this.dataSource.query(sql, [orgId, callId, maxBytes]);
    return { row, wholeText: kept[0] ? kept[0].text : 'null' };
  }

  /** The transaction an approved call's effect writes in, for `settleRunning` to commit (CallTransaction). */
  callTransaction(): CallTransaction {
    return new CallTransaction(this.dataSource);
  }

  /**
   * Writes the outcome of an approved call that was running, with its whole result when offloaded
   * and its audit events, in ONE statement, committed with what its tool wrote in `effects` (kept
   * only when it succeeded). When the sweeper got there first (the lease ran out), its
   * `interrupted` stands, the tool's writes are rolled back and nothing is written: the answer is
   * what is stored.
   */
  async settleRunning(
    orgId: string,
    callId: string,
    settlement: Settlement,
    completedAt: Date,
    events: AuditEventInput[],
    effects?: CallTransaction,
  ): Promise<ToolCallRow> {
    const write = (db: Queryable) => this.writeSettlement(db, orgId, callId, settlement, completedAt, events);
    const settled = effects ? await effects.settle(settlement.status === 'succeeded', write) : await write(this.dataSource);
    if (!settled) return (await this.findCall(orgId, callId))!;
    this.audit.committed(events);
    return settled;
  }

  private async writeSettlement(
    db: Queryable,
    orgId: string,
    callId: string,
    settlement: Settlement,
    completedAt: Date,
    events: AuditEventInput[],
  ): Promise<ToolCallRow | undefined> {
    const ok = settlement.status === 'succeeded';
    const s = new Statement();
    const org = s.param(orgId);
    s.with(
      `UPDATE tool_call SET status = ${s.param(settlement.status)}, result = ${s.param(ok ? (settlement.json ?? JSON.stringify(settlement.result)) : null)}::jsonb,
              result_truncated = ${s.param(ok && settlement.truncated)}, result_offloaded = ${s.param(ok && settlement.offloaded !== undefined)},
              error_code = ${s.param(ok ? null : settlement.error.code)}, error_message = ${s.param(ok ? null : settlement.error.message)},
              completed_at = ${s.param(completedAt)}, lease_expires_at = NULL
        WHERE org_id = ${org} AND id = ${s.param(callId)} AND status = 'running'
        RETURNING *`,
    );
    if (ok && settlement.offloaded) {
      s.with(
        `INSERT INTO tool_call_result (tool_call_id, org_id, result, tokens)
         SELECT w0.id, ${org}::uuid, ${s.param(settlement.offloaded.json)}::jsonb, ${s.param(settlement.offloaded.tokens)}::integer FROM w0`,
      );
    }
    const audit = auditInsertWhen(events, s.params.length + 1, 'EXISTS (SELECT 1 FROM w0)');
    s.params.push(...audit.params);
    s.with(audit.sql);
    const [settled]: ToolCallRow[] = await db.query(s.finish(`SELECT ${CALL_COLUMNS} FROM w0 c`), s.params);
    return settled;
  }
}
