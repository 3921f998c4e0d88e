import { Injectable, Logger } from '@nestjs/common';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { Metrics } from '../telemetry/metrics';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';

/** Who cancelled the run: the audit actor of the rejections, and the approvals' `decidedBy`. */
export interface Canceller {
  actor: { type: string; id: string };
  keyId: string;
}

/** A run has at most RUN_MAX_STEPS answers of tool calls; this bounds the loop if something keeps adding. */
const MAX_PAGES = 100;

/**
 * Settles what a cancelled run leaves waiting for a person. Its pending approvals are rejected
 * with a reason naming the run: nothing will read their outcome any more, so approving one later
 * would run a side effect for nobody. Each goes through the approvals' one conditional decision
 * (a person deciding at the same moment either wins, or answers 409 approval_already_decided
 * after this), audited as `approval.rejected` by whoever cancelled.
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

  /**
   * Rejects every approval of the run's own calls still pending; answers how many this call decided.
   * Its own: made by the run (entry point `run`) for its agent. `runId` is free text on a REST or MCP
   * call, so another agent's call (or a client's own) may carry the same id; the run does not read
   * their outcome, and whoever cancelled it may not decide them.
   */
  async settle(orgId: string, run: { id: string; agentId: string }, by: Canceller): Promise<number> {
    const runId = run.id;
    const reason = `The run ${runId} was cancelled; the call was not run.`;
    const decided: string[] = [];
    const own = { runId, agentId: run.agentId, entryPoint: 'run' as const, status: 'pending_approval' as const, limit: 100 };
    for (let page = 0; page < MAX_PAGES; page++) {
      // Each pass decides what it lists, so the next pass lists what is still pending (new or lost races).
      const pending = (await this.calls.listCalls(orgId, own)).items.filter((c) => c.approvalId);
      if (pending.length === 0) break;
      for (const call of pending) {
        const approval = await this.approvals.findApproval(orgId, call.approvalId!);
        if (!approval || approval.status !== 'pending') continue;
        const result = await this.approvals.decide(approval, { decidedBy: by.keyId, decidedAt: new Date(), note: reason, outcome: 'rejected', leaseMs: 0 }, [
          {
            type: 'approval.rejected',
            orgId,
            actor: by.actor,
            target: { type: 'approval', id: approval.id },
            data: { toolCallId: approval.tool_call_id, argumentsHash: approval.arguments_hash, reason, runId, cause: 'run_cancelled' },
          },
        ]);
        // Lost to a person's decision or to its expiry: it is settled either way.
        if (result.won) {
          decided.push(result.call.id);
          this.metrics.approvalDecided('rejected', (Date.now() - result.approval.created_at.getTime()) / 1000);
        }
      }
    }
    if (decided.length > 0) {
      this.settled.notify(decided);
      this.logger.log({ runId, rejected: decided.length }, "rejected a cancelled run's pending approvals");
    }
    return decided.length;
  }
}
