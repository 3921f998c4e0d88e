import { Injectable, Logger } from '@nestjs/common';
import type { AuditEventInput } from '../audit/audit.service';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { Metrics } from '../telemetry/metrics';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import type { Queryable } from '../tool-calls/tool-call-rows';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';

/**
 * Why the run ended with approvals still pending, and who ended it: the audit actor of the
 * rejections. A cancel is the canceller's decision (`decidedBy` its key); a revoked key's runs are
 * settled by the platform (no `decidedBy`), the revoked key named in the audit event.
 */
export type RunEnd =
  | { cause: 'run_cancelled'; actor: { type: string; id: string }; keyId: string }
  | { cause: 'api_key_revoked'; actor: { type: string; id: string }; keyId: string };

/** A run has at most RUN_MAX_STEPS answers of tool calls; this bounds the loop if something keeps adding. */
const MAX_PAGES = 100;

/**
 * Settles what a run that ended early (cancelled, or the key that started it revoked) leaves
 * waiting for a person. Its pending approvals are rejected with a reason naming the run and the
 * cause: nothing will read their outcome any more, so approving one later would run a side effect
 * for nobody. Each goes through the approvals' one conditional decision (a person deciding at the
 * same moment either wins, or answers 409 approval_already_decided after this), audited as
 * `approval.rejected` by whoever ended the run.
 */
@Injectable()
export class CancelledRunApprovals {
  private readonly logger = new Logger(CancelledRunApprovals.name);

  constructor(
    private readonly calls: ToolCallsRepository,
    private readonly approvals: ApprovalsRepository,
    private readonly settled: CallSettledNotifier,
    private readonly metrics: Metrics,
  ) {}

  /** Rejects the run's pending approvals and wakes their waiters; answers how many this call decided. */
  async settle(orgId: string, run: { id: string; agentId: string }, end: RunEnd): Promise<number> {
    const decided = await this.reject(orgId, run, end);
    this.notify(run.id, decided);
    return decided.length;
  }

  /**
   * Rejects every approval of the run's own calls still pending, with `db` (a transaction's manager
   * when the rejections belong to a larger change); answers the calls this decided, for `notify`
   * once that change is committed. Its own: made by the run (entry point `run`) for its agent.
   * `runId` is free text on a REST or MCP call, so another agent's call (or a client's own) may
   * carry the same id; the run does not read their outcome, and whoever ended it may not decide them.
   */
  async reject(orgId: string, run: { id: string; agentId: string }, end: RunEnd, db?: Queryable): Promise<string[]> {
    const runId = run.id;
    const reason = CancelledRunApprovals.noteOf(runId, end);
    const decidedBy = end.cause === 'run_cancelled' ? end.keyId : null;
    const decided: string[] = [];
    const own = { runId, agentId: run.agentId, entryPoint: 'run' as const, status: 'pending_approval' as const, limit: 100 };
    for (let page = 0; page < MAX_PAGES; page++) {
      // Each pass decides what it lists, so the next pass lists what is still pending (new or lost races).
      const pending = (await this.calls.listCalls(orgId, own, db)).items.filter((c) => c.approvalId);
      if (pending.length === 0) break;
      for (const call of pending) {
        const approval = await this.approvals.findApproval(orgId, call.approvalId!, db);
        if (!approval || approval.status !== 'pending') continue;
        const result = await this.approvals.decide(
          approval,
          { decidedBy, decidedAt: new Date(), note: reason, outcome: 'rejected', leaseMs: 0 },
          [
            CancelledRunApprovals.rejectionEvent(orgId, end, {
              approvalId: approval.id,
              toolCallId: approval.tool_call_id,
              argumentsHash: approval.arguments_hash,
              runId,
              reason,
            }),
          ],
          db,
        );
        // Lost to a person's decision or to its expiry: it is settled either way.
        if (result.won) {
          decided.push(result.call.id);
          this.metrics.approvalDecided('rejected', (Date.now() - result.approval.created_at.getTime()) / 1000);
        }
      }
    }
    return decided;
  }

  /** The audit event of one such rejection, by whoever ended the run (also written by a key's revocation, many at once). */
  static rejectionEvent(
    orgId: string,
    end: RunEnd,
    r: { approvalId: string; toolCallId: string; argumentsHash: string; runId: string; reason: string },
  ): AuditEventInput {
    return {
      type: 'approval.rejected',
      orgId,
      actor: end.actor,
      target: { type: 'approval', id: r.approvalId },
      data: {
        toolCallId: r.toolCallId,
        argumentsHash: r.argumentsHash,
        reason: r.reason,
        runId: r.runId,
        cause: end.cause,
        ...(end.cause === 'api_key_revoked' ? { apiKeyId: end.keyId } : {}),
      },
    };
  }

  /** What a rejection says of why: the run and the cause. */
  static noteOf(runId: string, end: Pick<RunEnd, 'cause'>): string {
    const { prefix, suffix } = CancelledRunApprovals.noteAround(end);
    return prefix + runId + suffix;
  }

  /** The note's words before and after the run's id (a statement that rejects many puts each id between). */
  static noteAround(end: Pick<RunEnd, 'cause'>): { prefix: string; suffix: string } {
    return end.cause === 'run_cancelled'
      ? { prefix: 'The run ', suffix: ' was cancelled; the call was not run.' }
      : { prefix: 'The API key that started the run ', suffix: ' was revoked; the run failed and the call was not run.' };
  }

  notify(runId: string, decided: string[]): void {
    if (decided.length === 0) return;
    this.settled.notify(decided);
    this.logger.log({ runId, rejected: decided.length }, 'rejected the pending approvals of a run that ended');
  }
}
