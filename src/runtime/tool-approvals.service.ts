import { Inject, Injectable } from '@nestjs/common';
import type { VersionTool } from '../agents/built-version';
import { canonicalHash } from '../agents/digests';
import { actorOf, OrgPrincipal, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { ApprovalView, ToolCallView } from '../tool-calls/tool-calls.dto';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import { ToolCallMaintenanceRepository } from '../tool-calls/tool-call-maintenance.repository';
import { ApprovalRow, toApprovalView, ToolCallRow, toToolCallView } from '../tool-calls/tool-call-rows';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';
import { CallSettledNotifier } from './call-settled.notifier';
import { Denial, invalidArguments, keyOf, missingTool, settledEvent, ToolCallGuards } from './tool-call-guards';
import { RunnableVersion, ToolImplementations } from './tool-implementations';
import { ToolRunner } from './tool-runner.service';
import type { GovernanceFacts } from './tool-policy';
import { Metrics } from '../telemetry/metrics';
import { inGuardsSpan, inToolCallSpan } from '../telemetry/tool-tracing';

export interface ApprovalDecision {
  approval: ApprovalView;
  toolCall: ToolCallView;
}

/**
 * Deciding approvals. Approving runs the call, once: the pending -> approved change is one
 * conditional UPDATE, and only the request whose UPDATE matched runs the tool. Every guard of the
 * executor runs again with the approver's view of the organization (its current scopes).
 */
@Injectable()
export class ToolApprovals {
  private readonly leaseMs: number;

  constructor(
    private readonly implementations: ToolImplementations,
    private readonly guards: ToolCallGuards,
    private readonly runner: ToolRunner,
    private readonly store: ToolCallsRepository,
    private readonly approvals: ApprovalsRepository,
    private readonly maintenance: ToolCallMaintenanceRepository,
    private readonly settled: CallSettledNotifier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    this.leaseMs = config.toolTimeoutMs + config.toolLeaseGraceMs;
  }

  async approve(ctx: RequestContext, approvalId: string, decision: { note?: string; arguments?: unknown }): Promise<ApprovalDecision> {
    const principal = keyOf(ctx);
    const { row, facts } = await this.decidable(principal, approvalId);
    // The approved run is the call's execution: its span, like the request's, is execute_tool.
    return inToolCallSpan(
      { toolName: row.tool, orgId: principal.orgId, agentId: row.agent_id, version: row.version, entryPoint: 'approval', callId: row.tool_call_id },
      () => this.approveDecidable(principal, row, facts, decision),
    );
  }

  private async approveDecidable(
    principal: OrgPrincipal,
    row: ApprovalRow,
    facts: GovernanceFacts,
    decision: { note?: string; arguments?: unknown },
  ): Promise<ApprovalDecision> {
    const approvalId = row.id;
    const orgId = principal.orgId;
    const { runnable, tool, args, edited, denial } = await inGuardsSpan((passed) => this.guard(principal, row, facts, decision, passed));

    const decidedAt = new Date();
    const actor = actorOf(principal);
    const result = await this.approvals.decide(
      row,
      {
        decidedBy: principal.id,
        decidedAt,
        note: decision.note ?? null,
        outcome: 'approved',
        approvedArguments: edited,
        leaseMs: this.leaseMs,
        // Judged again under lock as the decision commits: the request was authorized when it arrived.
        authority: { keyId: principal.type === 'api_key' ? principal.id : null, scopes: tool.scopes },
      },
      [
        {
          type: 'approval.approved',
          orgId,
          actor,
          target: { type: 'approval', id: approvalId },
          data: {
            toolCallId: row.tool_call_id,
            argumentsHash: row.arguments_hash,
            ...(edited ? { approvedArgumentsHash: edited.hash, argumentsEdited: true } : {}),
            ...(decision.note ? { note: decision.note } : {}),
          },
        },
      ],
    );
    if (!result.won && result.why === 'revoked') throw ApiError.unauthorized('The key was revoked while it decided; nothing was decided.');
    if (!result.won && result.why === 'run_key_gone') return this.rejectForExpiredRunKey(row);
    if (!result.won && result.why === 'scope_removed') {
      // Refused (and audited) as if the organization's scopes had been read with the key.
      await this.guards.canRunNow(runnable.built, tool, { ...denial, principal: { ...principal, orgScopes: result.scopes } }, facts);
      throw new Error('a scope stopped the decision but the tool policy found nothing to refuse');
    }
    if (!result.won && result.why === 'switched') {
      // A switch committed while this request checked: refused as if it had been read first, still pending.
      await this.guards.canRunNow(runnable.built, tool, denial, result.facts);
      throw new Error('a switch stopped the decision but the tool policy found nothing to refuse');
    }
    if (!result.won) return this.refuseDecision(result.why, orgId, approvalId);
    this.metrics.approvalDecided('approved', (decidedAt.getTime() - result.approval.created_at.getTime()) / 1000);

    const call = result.call;
    // What the tool writes in the product's database commits with its outcome, or not at all.
    const effects = this.store.callTransaction();
    let stored: ToolCallRow;
    try {
      const outcome = await this.runner.run(
        runnable,
        tool,
        args,
        { id: call.id, orgId, agentId: call.agent_id, version: call.version, runId: call.run_id },
        effects,
      );
      stored = await this.store.settleRunning(
        orgId,
        call.id,
        outcome,
        new Date(),
        [settledEvent(orgId, actor, call.id, edited?.hash ?? call.arguments_hash, outcome, edited !== undefined)],
        effects,
      );
    } finally {
      // Settled: nothing left. Broken on the way: what the tool wrote is rolled back with it.
      await effects.abandon();
    }
    this.settled.notify([call.id]);
    return { approval: toApprovalView(result.approval), toolCall: toToolCallView(stored) };
  }

  /** The guards again, as the approved call is about to run: what to run, with which arguments. */
  private async guard(
    principal: OrgPrincipal,
    row: ApprovalRow,
    facts: GovernanceFacts,
    decision: { arguments?: unknown },
    passed: string[],
  ): Promise<{ runnable: RunnableVersion; tool: VersionTool; args: object; edited?: { value: Record<string, unknown>; hash: string }; denial: Denial }> {
    const orgId = principal.orgId;
    const denial: Denial = {
      principal,
      target: { type: 'tool_call', id: row.tool_call_id },
      data: { agentId: row.agent_id, version: row.version, tool: row.tool, approvalId: row.id, argumentsHash: row.arguments_hash },
    };

    const runnable = await this.implementations.build(orgId, principal.orgScopes, row.agent_id, row.version);
    const built = runnable.built;
    const tool = built.tools.find((t) => t.capabilityId === row.capability_id && t.toolId === row.tool_id);
    if (!tool) return this.guards.deny(denial, missingTool(built, row.tool));
    passed.push('tool_offered');
    denial.tool = tool;
    // The switches as read with the approval, in this request: an incident response still stops it.
    await this.guards.canRunNow(built, tool, denial, facts);
    passed.push('tool_policy');

    let args: object;
    let edited: { value: Record<string, unknown>; hash: string } | undefined;
    if (decision.arguments !== undefined) {
      const validation = await this.implementations.validate(tool, decision.arguments, orgId);
      if (validation.errors.length) return this.guards.deny(denial, invalidArguments(validation.errors, validation.omitted));
      args = validation.value;
      const hash = canonicalHash(validation.plain);
      // A console that sends the arguments back unchanged has edited nothing: the call is not
      // marked as run with edited arguments (canonical JSON, so key order does not count).
      if (hash !== row.arguments_hash) edited = { value: validation.plain, hash };
    } else {
      // Fail closed: run only what the approval is bound to, checked again byte for byte.
      const validation = await this.implementations.validate(tool, row.arguments, orgId);
      const valid = validation.errors.length === 0;
      if (canonicalHash(row.arguments) !== row.arguments_hash || (valid && canonicalHash(validation.plain) !== row.arguments_hash)) {
        return this.guards.deny(
          denial,
          new ApiError(
            'approval_arguments_changed',
            'The stored arguments no longer match what the approval is bound to; nothing ran. Reject it and ask again.',
          ),
        );
      }
      // The arguments are the ones bound, but the check refuses them now: a vendor's schema whose
      // check ran out of its thread's time or memory this once. Said as it is (the approval stays
      // pending, to approve again), not as arguments someone changed.
      if (!valid) return this.guards.deny(denial, invalidArguments(validation.errors, validation.omitted));
      args = validation.value;
    }
    passed.push('arguments');
    return { runnable, tool, args, edited, denial };
  }

  /** Rejects a pending approval; the call becomes `rejected` with the reason as its error message. */
  async reject(ctx: RequestContext, approvalId: string, reason: string): Promise<ApprovalDecision> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    const { row } = await this.decidable(principal, approvalId);
    const actor = actorOf(principal);
    const result = await this.approvals.decide(
      row,
      { decidedBy: principal.id, decidedAt: new Date(), note: reason, outcome: 'rejected', leaseMs: this.leaseMs },
      [
        {
          type: 'approval.rejected',
          orgId,
          actor,
          target: { type: 'approval', id: row.id },
          data: { toolCallId: row.tool_call_id, argumentsHash: row.arguments_hash, reason },
        },
      ],
    );
    if (!result.won) return this.refuseDecision(result.why, orgId, approvalId);
    this.metrics.approvalDecided('rejected', (Date.now() - result.approval.created_at.getTime()) / 1000);
    this.settled.notify([result.call.id]);
    return { approval: toApprovalView(result.approval), toolCall: toToolCallView(result.call) };
  }

  /**
   * A run's call whose run's key expired (or was revoked through a change that missed it): rejected
   * as the key's revocation would have, nobody deciding, and the run woken to fail `unauthorized`.
   */
  private async rejectForExpiredRunKey(row: ApprovalRow): Promise<never> {
    const runId = (await this.store.findCall(row.org_id, row.tool_call_id))?.run_id ?? '';
    const reason = `The API key that started the run ${runId} expired; the run failed and the call was not run.`;
    const result = await this.approvals.decide(row, { decidedBy: null, decidedAt: new Date(), note: reason, outcome: 'rejected', leaseMs: 0 }, [
      {
        type: 'approval.rejected',
        orgId: row.org_id,
        actor: { type: 'run', id: runId },
        target: { type: 'approval', id: row.id },
        data: { toolCallId: row.tool_call_id, argumentsHash: row.arguments_hash, reason, runId, cause: 'api_key_expired' },
      },
    ]);
    if (!result.won) return this.refuseDecision(result.why, row.org_id, row.id);
    this.metrics.approvalDecided('rejected', (Date.now() - result.approval.created_at.getTime()) / 1000);
    this.settled.notify([result.call.id]);
    throw alreadyDecided();
  }

  /** The approval as it stands, if the principal may still decide it; refuses otherwise (and records an expiry it finds). */
  private async decidable(principal: OrgPrincipal, approvalId: string): Promise<{ row: ApprovalRow; facts: GovernanceFacts }> {
    const found = await this.approvals.findDecidable(principal.orgId, approvalId);
    if (!found) throw ApiError.notFound('approval');
    const row = found.row;
    if (row.requested_by === principal.id) {
      throw new ApiError('self_approval_forbidden', 'The key that requested this call may not decide its approval.');
    }
    if (row.status === 'expired') return this.refuseDecision('expired', principal.orgId, approvalId);
    if (row.status !== 'pending') return this.refuseDecision('decided', principal.orgId, approvalId);
    return found;
  }

  private async refuseDecision(why: 'decided' | 'expired' | 'missing', orgId: string, approvalId: string): Promise<never> {
    if (why === 'missing') throw ApiError.notFound('approval');
    if (why === 'decided') throw alreadyDecided();
    // Written now rather than left to the sweeper, so lists and the audit log agree with this answer.
    const expired = await this.maintenance.expireApprovals([approvalId]);
    if (expired.length === 0) {
      // A decision made just before the expiry may have committed while this request waited for
      // its lock, after this request's snapshot was taken: that read "pending, past its expiry".
      // Saying "nothing ran" of an approved call would be false, so the approval is read again.
      const now = await this.approvals.findApproval(orgId, approvalId);
      if (now?.status === 'approved' || now?.status === 'rejected') throw alreadyDecided();
    }
    // An expired approval waited its whole time to live.
    for (let i = 0; i < expired.length; i++) this.metrics.approvalDecided('expired', this.config.approvalTtlSeconds);
    this.settled.notify(expired.map((e) => e.callId));
    throw new ApiError('approval_expired', 'The approval expired before it was decided; nothing ran.');
  }
}

function alreadyDecided(): ApiError {
  return new ApiError('approval_already_decided', 'The approval has already been decided.');
}
