import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { BuiltVersion, RunnableTool } from '../agents/built-version';
import { VersionBuilder } from '../agents/version-builder.service';
import type { AuditEventInput } from '../audit/audit.service';
import { actorOf, ApiKeyPrincipal, RequestContext } from '../auth/principal';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import { ApiError, FieldError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { canonicalHash } from '../agents/digests';
import { CallSettledNotifier } from './call-settled.notifier';
import { IdempotencyClaim, IdempotencyService } from './idempotency.service';
import { runTool, ToolOutcome } from './run-tool';
import { ApprovalReason, ApprovalView, EntryPoint, ToolCallStatus, ToolCallView } from './tool-calls.dto';
import {
  ApprovalRow,
  NewCall,
  resultRefOf,
  toApprovalView,
  ToolCallRow,
  ToolCallsRepository,
  toToolCallView,
  viewOfNewCall,
} from './tool-calls.repository';

/** What any entry point (REST, MCP, an agent run) asks the executor to do. */
export interface ToolCallRequest {
  agentId: string;
  /** The offered name (after overrides). */
  tool: string;
  /** Untrusted: validated against the tool's input class before anything else happens with them. */
  arguments: unknown;
  /** Default `latest`. */
  version?: number | 'latest';
  runId?: string | null;
  /** Recorded on the call and in its audit events. */
  entryPoint: EntryPoint;
  idempotencyKey?: string;
  /**
   * For entry points that re-ask instead of holding a request open (MCP): when this requester
   * already has a call of this tool with the same validated arguments whose decision it has not
   * been handed yet, answer with that call (still waiting, or decided) instead of creating a
   * second approval. The decision is handed over once; a later identical request is a new call.
   */
  resumePending?: boolean;
}

export interface ToolCallOutcome {
  /** 200: it ran (succeeded or failed) or, when resumed, it was decided; 202: it waits for approval. */
  status: 200 | 202;
  call: ToolCallView;
  /** The first answer given to this Idempotency-Key, replayed; nothing ran. */
  replayed: boolean;
  /** `resumePending` found an earlier call; nothing new was created. */
  resumed: boolean;
}

export interface ApprovalDecision {
  approval: ApprovalView;
  toolCall: ToolCallView;
}

export interface WaitOptions {
  /** How long to wait at most; the call as it stands then is returned. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** How often another node's decision is looked for. Default 1000 ms. */
  pollMs?: number;
  /** Called while still waiting, about every `pollMs` (for MCP progress notifications). */
  onProgress?: (call: ToolCallView, waitedMs: number) => void;
}

/** Statuses after which nothing about the call changes any more. */
export const SETTLED_STATUSES: ReadonlySet<ToolCallStatus> = new Set(['succeeded', 'failed', 'rejected', 'expired']);

/** The grace past the tool timeout before a running call is presumed abandoned. */

type DenialTarget = { type: 'agent' | 'tool_call'; id: string };

/**
 * The one place where tools run. Every entry point (the REST tool-call endpoint, an approval
 * being granted, MCP, agent runs) calls this, and so passes the same guards in the same order:
 *
 *   the tool is offered by the version (404 unknown_tool)
 *   -> its definition is the one pinned at publish (409 tool_definition_changed)
 *   -> the organization holds every scope its capability needs (403 scope_not_granted)
 *   -> the run's budget contributed by capabilities (429 budget_exceeded)
 *   -> the arguments against the tool's input class (422 invalid_arguments)
 *   -> the approval gate (202: persisted with its approval, bound to the arguments' hash)
 *   -> run (timeout, abort signal) -> output budget -> persist -> audit
 *
 * Every refusal of a guard is audited as `tool_call.denied` with its code. Nothing here holds a
 * database transaction while a tool runs: tools may query the database themselves.
 */
@Injectable()
export class ToolExecutor {
  private readonly logger = new Logger(ToolExecutor.name);
  private readonly leaseMs: number;

  constructor(
    private readonly versions: VersionBuilder,
    private readonly registry: CapabilityRegistry,
    private readonly store: ToolCallsRepository,
    private readonly idempotency: IdempotencyService,
    private readonly settled: CallSettledNotifier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.leaseMs = config.toolTimeoutMs + config.toolLeaseGraceMs;
  }

  /**
   * Requests one tool call. Answers `{ status: 200 }` when it ran (the call `succeeded` or `failed`:
   * a tool's failure is a result) or `{ status: 202 }` when it waits for approval. Every refusal is
   * an ApiError (see the guard order above; also 404 not_found / 409 not_published for the agent,
   * 422 idempotency_key_reused, 409 idempotency_in_progress).
   */
  async request(ctx: RequestContext, req: ToolCallRequest): Promise<ToolCallOutcome> {
    const principal = keyOf(ctx);
    let claim: IdempotencyClaim | undefined;
    if (req.idempotencyKey !== undefined) {
      const fingerprint = canonicalHash({
        agentId: req.agentId,
        tool: req.tool,
        arguments: req.arguments ?? null,
        version: req.version ?? 'latest',
        runId: req.runId ?? null,
      });
      const claimed = await this.idempotency.claim(principal.orgId, req.agentId.toLowerCase(), req.idempotencyKey, fingerprint, this.leaseMs);
      if (claimed.kind === 'replay') {
        return { status: claimed.status as 200 | 202, call: claimed.body as ToolCallView, replayed: true, resumed: false };
      }
      claim = claimed.claim;
    }
    try {
      const outcome = await this.requestClaimed(principal, req, claim);
      if (claim && outcome.resumed) await this.idempotency.release(claim);
      return outcome;
    } catch (err) {
      // Refused or broken before anything was recorded: the key is free for a corrected retry.
      if (claim) await this.idempotency.release(claim);
      throw err;
    }
  }

  private async requestClaimed(principal: ApiKeyPrincipal, req: ToolCallRequest, claim: IdempotencyClaim | undefined): Promise<ToolCallOutcome> {
    const orgId = principal.orgId;
    const createdAt = new Date();
    const built = await this.versions.build(orgId, principal.orgScopes, req.agentId, req.version ?? 'latest');
    const runId = req.runId ?? null;
    const denial = {
      principal,
      target: { type: 'agent', id: built.agentId } as DenialTarget,
      data: { agentId: built.agentId, version: built.version, tool: req.tool, runId, entryPoint: req.entryPoint } as Record<string, unknown>,
    };

    const tool = built.tools.find((t) => t.name === req.tool);
    if (!tool) return this.deny(denial, missingTool(built, req.tool));
    // Validated ahead of the guards that come before it only so that their denials can name the
    // arguments' hash; a refusal still follows the guard order.
    const validation = this.registry.validateToolInput(tool.capabilityId, tool.toolId, req.arguments);
    const valid = validation.errors.length === 0;
    const argumentsHash = valid ? canonicalHash(validation.plain) : undefined;
    if (argumentsHash) denial.data = { ...denial.data, argumentsHash };
    await this.guardDefinitionAndScopes(built, tool, principal, denial);
    const reason = approvalReasonOf(tool);

    if (valid && reason && req.resumePending) {
      const resumed = await this.resume(principal, built, tool, argumentsHash!);
      if (resumed) return resumed;
    }

    const limit = built.limits.maxToolCallsPerRun;
    if (limit !== undefined && runId !== null) {
      // Invalid arguments reserve nothing, but a run already at its limit still answers 429 first.
      const within = valid ? await this.store.reserveRunCall(orgId, built.agentId, runId, limit) : (await this.store.runCalls(orgId, built.agentId, runId)) < limit;
      if (!within) {
        return this.deny(denial, new ApiError(429, 'budget_exceeded', `Run "${runId}" has reached its limit of ${limit} tool calls.`, undefined, { limit }));
      }
    }
    if (!valid) {
      return this.deny(denial, invalidArguments(validation.errors, validation.omitted));
    }

    const call: NewCall = {
      id: randomUUID(),
      orgId,
      agentId: built.agentId,
      version: built.version,
      tool: tool.name,
      capabilityId: tool.capabilityId,
      toolId: tool.toolId,
      runId,
      entryPoint: req.entryPoint,
      arguments: validation.plain,
      argumentsHash: argumentsHash!,
      requestedBy: principal.id,
      createdAt,
    };
    const actor = actorOf(principal);
    const requested: AuditEventInput = {
      type: 'tool_call.requested',
      orgId,
      actor,
      target: { type: 'tool_call', id: call.id },
      data: { agentId: call.agentId, version: call.version, tool: call.tool, capabilityId: call.capabilityId, toolId: call.toolId, runId, entryPoint: call.entryPoint, argumentsHash: call.argumentsHash },
    };

    if (reason) {
      const approvalId = randomUUID();
      const expiresAt = new Date(createdAt.getTime() + this.config.approvalTtlSeconds * 1000);
      const view = viewOfNewCall(call, 'pending_approval', { approvalId });
      await this.store.insertPending(
        call,
        { id: approvalId, reason, expiresAt, awaitingRequester: req.resumePending === true },
        [
          requested,
          {
            type: 'approval.requested',
            orgId,
            actor,
            target: { type: 'approval', id: approvalId },
            data: { toolCallId: call.id, agentId: call.agentId, tool: call.tool, reason, argumentsHash: call.argumentsHash, expiresAt: expiresAt.toISOString() },
          },
        ],
        claim && { ...claim, status: 202, body: view },
      );
      return { status: 202, call: view, replayed: false, resumed: false };
    }

    // Fail closed: only a read-only tool ever gets here (approvalReasonOf), so nothing with a side
    // effect can run without first being recorded as running under a lease.
    if (tool.risk !== 'read_only') throw new Error(`invariant: ${tool.capabilityId}/${tool.toolId} (${tool.risk}) reached execution without approval`);
    const outcome = await this.run(tool, validation.value, call);
    const completedAt = new Date();
    const view = viewOfNewCall(call, outcome.status, { ...settledFields(call.id, outcome), completedAt: completedAt.toISOString() });
    await this.store.insertSettled(call, outcome, completedAt, [requested, settledEvent(orgId, actor, call.id, call.argumentsHash, outcome, false)], claim && {
      ...claim,
      status: 200,
      body: view,
    });
    return { status: 200, call: view, replayed: false, resumed: false };
  }

  /**
   * Approves a pending approval and runs the call, once: the pending -> approved change is one
   * conditional UPDATE, and only the request whose UPDATE matched runs the tool. Every guard runs
   * again with the approver's view of the organization (its current scopes).
   */
  async approve(ctx: RequestContext, approvalId: string, decision: { note?: string; arguments?: unknown }): Promise<ApprovalDecision> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    const row = await this.decidable(principal, approvalId);
    const denial = {
      principal,
      target: { type: 'tool_call', id: row.tool_call_id } as DenialTarget,
      data: { agentId: row.agent_id, version: row.version, tool: row.tool, approvalId: row.id, argumentsHash: row.arguments_hash } as Record<string, unknown>,
    };

    const built = await this.versions.build(orgId, principal.orgScopes, row.agent_id, row.version);
    const tool = built.tools.find((t) => t.capabilityId === row.capability_id && t.toolId === row.tool_id);
    if (!tool) return this.deny(denial, missingTool(built, row.tool));
    await this.guardDefinitionAndScopes(built, tool, principal, denial);

    let args: object;
    let edited: { value: Record<string, unknown>; hash: string } | undefined;
    if (decision.arguments !== undefined) {
      const validation = this.registry.validateToolInput(tool.capabilityId, tool.toolId, decision.arguments);
      if (validation.errors.length) return this.deny(denial, invalidArguments(validation.errors, validation.omitted));
      args = validation.value;
      edited = { value: validation.plain, hash: canonicalHash(validation.plain) };
    } else {
      // Fail closed: run only what the approval is bound to, checked again byte for byte.
      const validation = this.registry.validateToolInput(tool.capabilityId, tool.toolId, row.arguments);
      if (canonicalHash(row.arguments) !== row.arguments_hash || validation.errors.length || canonicalHash(validation.plain) !== row.arguments_hash) {
        return this.deny(
          denial,
          new ApiError(409, 'approval_arguments_changed', 'The stored arguments no longer match what the approval is bound to; nothing ran. Reject it and ask again.'),
        );
      }
      args = validation.value;
    }

    const decidedAt = new Date();
    const actor = actorOf(principal);
    const result = await this.store.decide(
      { orgId, approvalId, decidedBy: principal.id, decidedAt, note: decision.note ?? null, outcome: 'approved', approvedArguments: edited, leaseMs: this.leaseMs },
      (approval) => [
        {
          type: 'approval.approved',
          orgId,
          actor,
          target: { type: 'approval', id: approval.id },
          data: {
            toolCallId: approval.tool_call_id,
            argumentsHash: approval.arguments_hash,
            ...(edited ? { approvedArgumentsHash: edited.hash, argumentsEdited: true } : {}),
            ...(decision.note ? { note: decision.note } : {}),
          },
        },
      ],
    );
    if (!result.won) return this.refuseDecision(result.why, approvalId);

    const call = result.call;
    const outcome = await this.run(tool, args, {
      id: call.id,
      orgId,
      agentId: call.agent_id,
      version: call.version,
      runId: call.run_id,
    });
    const stored = await this.store.settleRunning(orgId, call.id, outcome, new Date(), (c) => [
      settledEvent(orgId, actor, c.id, edited?.hash ?? c.arguments_hash, outcome, edited !== undefined),
    ]);
    this.settled.notify([call.id]);
    return { approval: toApprovalView(result.approval), toolCall: toToolCallView(stored) };
  }

  /** Rejects a pending approval; the call becomes `rejected` with the reason as its error message. */
  async reject(ctx: RequestContext, approvalId: string, reason: string): Promise<ApprovalDecision> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    await this.decidable(principal, approvalId);
    const actor = actorOf(principal);
    const result = await this.store.decide(
      { orgId, approvalId, decidedBy: principal.id, decidedAt: new Date(), note: reason, outcome: 'rejected', leaseMs: this.leaseMs },
      (approval) => [
        {
          type: 'approval.rejected',
          orgId,
          actor,
          target: { type: 'approval', id: approval.id },
          data: { toolCallId: approval.tool_call_id, argumentsHash: approval.arguments_hash, reason },
        },
      ],
    );
    if (!result.won) return this.refuseDecision(result.why, approvalId);
    this.settled.notify([result.call.id]);
    return { approval: toApprovalView(result.approval), toolCall: toToolCallView(result.call) };
  }

  /**
   * Waits until the call is decided and settled (`succeeded`, `failed`, `rejected`, `expired`) or
   * `timeoutMs` passes, and returns the call as it stands. A settled answer counts as handed to the
   * requester (see `resumePending`). Decisions made in this process wake it at once; those of other
   * nodes are seen within `pollMs`. 404 not_found for a call of another organization.
   */
  async waitForDecision(orgId: string, callId: string, options: WaitOptions): Promise<ToolCallView> {
    const started = Date.now();
    const pollMs = options.pollMs ?? 1000;
    for (;;) {
      const row = await this.store.findCall(orgId, callId);
      if (!row) throw ApiError.notFound('tool call');
      const view = toToolCallView(row);
      if (SETTLED_STATUSES.has(row.status)) {
        if (row.awaiting_requester) await this.store.markDelivered(orgId, callId);
        return view;
      }
      const waited = Date.now() - started;
      const left = options.timeoutMs - waited;
      if (left <= 0 || options.signal?.aborted) return view;
      if (waited > 0) options.onProgress?.(view, waited);
      await this.pause(callId, Math.min(pollMs, left), options.signal);
    }
  }

  /** Reads a call as the executor records it (404 not_found for another organization's). */
  async getCall(orgId: string, callId: string): Promise<ToolCallView> {
    const row = await this.store.findCall(orgId, callId);
    if (!row) throw ApiError.notFound('tool call');
    return toToolCallView(row);
  }

  private async resume(principal: ApiKeyPrincipal, built: BuiltVersion, tool: RunnableTool, argumentsHash: string): Promise<ToolCallOutcome | undefined> {
    const row = await this.store.findAwaiting({
      orgId: principal.orgId,
      agentId: built.agentId,
      version: built.version,
      capabilityId: tool.capabilityId,
      toolId: tool.toolId,
      requestedBy: principal.id,
      argumentsHash,
    });
    if (!row) return undefined;
    if (SETTLED_STATUSES.has(row.status)) {
      await this.store.markDelivered(principal.orgId, row.id);
      return { status: 200, call: toToolCallView(row), replayed: false, resumed: true };
    }
    return { status: 202, call: toToolCallView(row), replayed: false, resumed: true };
  }

  private async guardDefinitionAndScopes(
    built: BuiltVersion,
    tool: RunnableTool,
    principal: ApiKeyPrincipal,
    denial: { principal: ApiKeyPrincipal; target: DenialTarget; data: Record<string, unknown> },
  ): Promise<void> {
    // A tool the version never pinned was never reviewed either.
    if (tool.pinnedDigest === undefined || tool.digest !== tool.pinnedDigest) {
      await this.deny(
        denial,
        new ApiError(409, 'tool_definition_changed', `The definition of "${tool.name}" changed since version ${built.version} was published; publish the agent again. Nothing ran.`),
      );
    }
    const missing = tool.scopes.filter((s) => !principal.orgScopes.includes(s));
    if (missing.length) {
      await this.deny(
        denial,
        new ApiError(403, 'scope_not_granted', `The organization lacks scopes that "${tool.capabilityId}" needs: ${missing.join(', ')}. Nothing ran.`, undefined, { missingScopes: missing }),
      );
    }
  }

  /** Records the refusal (`tool_call.denied`) and throws it. */
  private async deny(d: { principal: ApiKeyPrincipal; target: DenialTarget; data: Record<string, unknown> }, error: ApiError): Promise<never> {
    await this.store.recordEvents([
      {
        type: 'tool_call.denied',
        orgId: d.principal.orgId,
        actor: actorOf(d.principal),
        target: d.target,
        // error.errors is bounded (ApiError): the append-only log never grows with an attacker's input.
        data: {
          ...d.data,
          code: error.code,
          detail: error.detail,
          ...(error.errors ? { errors: error.errors } : {}),
          ...(typeof error.extensions?.errorsOmitted === 'number' ? { errorsOmitted: error.extensions.errorsOmitted } : {}),
        },
      },
    ]);
    throw error;
  }

  /** The approval as it stands, if the principal may still decide it; refuses otherwise (and records an expiry it finds). */
  private async decidable(principal: ApiKeyPrincipal, approvalId: string): Promise<ApprovalRow> {
    const row = await this.store.findApproval(principal.orgId, approvalId);
    if (!row) throw ApiError.notFound('approval');
    if (row.requested_by === principal.id) {
      throw new ApiError(403, 'self_approval_forbidden', 'The key that requested this call may not decide its approval.');
    }
    if (row.status === 'expired') return this.refuseDecision('expired', approvalId);
    if (row.status !== 'pending') return this.refuseDecision('decided', approvalId);
    return row;
  }

  private async refuseDecision(why: 'decided' | 'expired' | 'missing', approvalId: string): Promise<never> {
    if (why === 'missing') throw ApiError.notFound('approval');
    if (why === 'expired') {
      // Written now rather than left to the sweeper, so lists and the audit log agree with this answer.
      const expired = await this.store.expireApprovals([approvalId]);
      this.settled.notify(expired.map((e) => e.callId));
      throw new ApiError(409, 'approval_expired', 'The approval expired before it was decided; nothing ran.');
    }
    throw new ApiError(409, 'approval_already_decided', 'The approval has already been decided.');
  }

  private run(tool: RunnableTool, args: object, call: { id: string; orgId: string; agentId: string; version: number; runId: string | null }): Promise<ToolOutcome> {
    return runTool(
      tool,
      args,
      { orgId: call.orgId, agentId: call.agentId, version: call.version, callId: call.id, runId: call.runId },
      this.config.toolTimeoutMs,
      (err) => this.logger.error({ err, callId: call.id, tool: `${tool.capabilityId}/${tool.toolId}` }, 'tool threw an unexpected error'),
    );
  }

  private pause(callId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const stop = this.settled.listen(callId, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Why approval is required, or null. Risk decides first whatever the built tool says: a tool with
 * a side effect never runs without approval, even if a builder computed its flags wrong.
 */
export function approvalReasonOf(tool: Pick<RunnableTool, 'risk' | 'declaration' | 'approvalReason' | 'requiresApproval'>): ApprovalReason | null {
  if (tool.risk !== 'read_only') return 'side_effecting';
  if (tool.declaration.interruptBefore) return 'interrupt_before';
  if (tool.approvalReason) return tool.approvalReason;
  return tool.requiresApproval ? 'spec_required' : null;
}

function keyOf(ctx: RequestContext): ApiKeyPrincipal {
  if (ctx.principal.type !== 'api_key') throw ApiError.forbidden('Only an organization\'s API key can run tools.');
  return ctx.principal;
}

/**
 * A name the version pinned at publish but the code no longer builds is drift (`removed`), refused
 * like a changed definition (API.md); a name it never offered is unknown.
 */
function missingTool(built: BuiltVersion, name: string): ApiError {
  if (Object.prototype.hasOwnProperty.call(built.pinnedTools, name)) {
    return new ApiError(409, 'tool_definition_changed', `The code no longer offers "${name}", which version ${built.version} was published with; publish the agent again. Nothing ran.`);
  }
  return new ApiError(404, 'unknown_tool', `Version ${built.version} of this agent offers no tool named "${name}".`);
}

function invalidArguments(errors: FieldError[], omitted = 0): ApiError {
  return new ApiError(
    422,
    'invalid_arguments',
    'The arguments do not match the tool\'s input schema; nothing ran.',
    errors.map((e) => ({ ...e, path: e.path ? `arguments.${e.path}` : 'arguments' })),
    { errorsOmitted: omitted },
  );
}

function settledFields(callId: string, outcome: ToolOutcome): Partial<ToolCallView> {
  if (outcome.status === 'failed') return { error: outcome.error };
  return { result: outcome.result, resultTruncated: outcome.truncated, ...(outcome.offloaded ? { resultRef: resultRefOf(callId) } : {}) };
}

function settledEvent(orgId: string, actor: { type: string; id: string }, callId: string, argumentsHash: string, outcome: ToolOutcome, edited: boolean): AuditEventInput {
  return outcome.status === 'succeeded'
    ? {
        type: 'tool_call.succeeded',
        orgId,
        actor,
        target: { type: 'tool_call', id: callId },
        data: { argumentsHash, resultTruncated: outcome.truncated, ...(outcome.offloaded ? { resultRef: resultRefOf(callId) } : {}), ...(edited ? { argumentsEdited: true } : {}) },
      }
    : {
        type: 'tool_call.failed',
        orgId,
        actor,
        target: { type: 'tool_call', id: callId },
        data: { argumentsHash, error: { code: outcome.error.code }, ...(edited ? { argumentsEdited: true } : {}) },
      };
}

export type { ToolCallRow };
