// Longer than 300 lines because one tool call's guard order is the product's contract and reads
// best top to bottom in one place (request, guards, approval gate or run, record); the guards, the
// runner and the approvals already live in files of their own beside it.
import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { BuiltVersion, VersionTool } from '../agents/built-version';
import { canonicalHash, textHash } from '../agents/digests';
import type { AuditEventInput } from '../audit/audit.service';
import { actorOf, AgentSnapshot, mayActFor, OrgPrincipal, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { jsonbSizeOver } from '../common/jsonb-size';
import { isUniqueViolation } from '../common/db-errors';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { EntryPoint, ToolCallStatus, ToolCallView } from '../tool-calls/tool-calls.dto';
import { NewCall, ToolCallsRepository, toToolCallView, viewOfNewCall } from '../tool-calls/tool-calls.repository';
import { IdempotencyClaim, IdempotencyRepository } from '../tool-calls/idempotency.repository';
import { Denial, invalidArguments, keyOf, missingTool, settledEvent, settledFields, ToolCallGuards } from './tool-call-guards';
import { RunnableVersion, ToolImplementations, ValidatedArguments } from './tool-implementations';
import { ApprovalReason, approvalReasonOf, GovernanceFacts, toolKey } from './tool-policy';
import { ToolRunner } from './tool-runner.service';
import { callFingerprint } from './call-fingerprint';
import { RunStorageRepository } from './run-storage.repository';
import type { Span } from '@opentelemetry/api';
import { Metrics } from '../telemetry/metrics';
import { inGuardsSpan, inSpan, inToolCallSpan } from '../telemetry/tool-tracing';

/** The unique index of calls their requester waits for (migrations/1764520000000-one-awaiting-call.ts). */
const AWAITED_CALL_INDEX = 'tool_call_awaiting_key';

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
  /** The worker asking (a run's profile and worker type): only the capabilities that apply to it offer tools. */
  profile?: string;
  workerType?: string;
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

/**
 * The snapshot's switches, when they are those of the version that was built and they say the
 * tool is not disabled; otherwise the guards read the tool's own switch (with its reason).
 */
function factsOf(snapshot: AgentSnapshot, built: number, tool: VersionTool): GovernanceFacts | undefined {
  const named = snapshot.version === 'latest' ? snapshot.agent?.latest_version : snapshot.version;
  if (named !== built || !snapshot.disabledTools || snapshot.disabledTools.has(toolKey(tool.capabilityId, tool.toolId))) return undefined;
  return { versionRetired: snapshot.versionRetired, disabledTools: new Map() };
}

/** Statuses after which nothing about the call changes any more. */
export const SETTLED_STATUSES: ReadonlySet<ToolCallStatus> = new Set(['succeeded', 'failed', 'rejected', 'expired']);

/**
 * The one place where a tool call is asked for. Every entry point (the REST tool-call endpoint,
 * MCP, agent runs) calls `request`; a granted approval runs through ToolApprovals, which shares
 * these guards (ToolCallGuards) and this runner (ToolRunner). The guards, in order:
 *
 *   the tool is offered by the version (404 unknown_tool)
 *   -> its definition is the one pinned at publish (409 tool_definition_changed)   } the tool policy's
 *   -> the organization holds every scope its capability needs (403 scope_not_granted) } whyCannotRun
 *   -> arguments the organization's storage would count, once it is full (409 conflict)
 *   -> a call that would wait for approval, once APPROVALS_MAX_PENDING_PER_ORG wait (429 rate_limited)
 *   -> the run's budget contributed by capabilities (429 budget_exceeded)
 *   -> the arguments against the tool's input class (422 invalid_arguments)
 *   -> the approval gate (the tool policy's approvalReasonOf; 202: persisted with its approval,
 *      bound to the arguments' hash)
 *   -> run (timeout, abort signal) -> output budget -> persist -> audit
 *
 * Every refusal of a guard is audited as `tool_call.denied` with its code. Nothing here holds a
 * database transaction while a tool runs: tools may query the database themselves.
 */
@Injectable()
export class ToolExecutor {
  private readonly leaseMs: number;

  constructor(
    private readonly implementations: ToolImplementations,
    private readonly guards: ToolCallGuards,
    private readonly runner: ToolRunner,
    private readonly store: ToolCallsRepository,
    private readonly idempotency: IdempotencyRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly storage: RunStorageRepository,
  ) {
    this.leaseMs = config.toolTimeoutMs + config.toolLeaseGraceMs;
  }

  /**
   * Requests one tool call. Answers `{ status: 200 }` when it ran (the call `succeeded` or `failed`:
   * a tool's failure is a result) or `{ status: 202 }` when it waits for approval. Every refusal is
   * an ApiError (see the guard order above; also 404 not_found / 409 not_published for the agent,
   * 422 idempotency_key_reused, 409 idempotency_in_progress).
   */
  request(ctx: RequestContext, req: ToolCallRequest): Promise<ToolCallOutcome> {
    const principal = keyOf(ctx);
    // The guard answers a pinned key's other agents first; here too, so no entry point added later can skip it.
    if (!mayActFor(principal, req.agentId)) return Promise.reject(ApiError.notFound('agent'));
    // One span per tool call, whichever entry point asked; guards, the tool and every query under it.
    return inToolCallSpan(
      { toolName: req.tool, orgId: principal.orgId, agentId: req.agentId, version: req.version ?? 'latest', entryPoint: req.entryPoint, runId: req.runId },
      async (span) => {
        const outcome = await this.requestTraced(principal, req, span);
        span.setAttribute('cp.tool_call.status', outcome.call.status);
        if (outcome.replayed) span.setAttribute('cp.idempotent_replay', true);
        span.setAttribute('gen_ai.tool.call.id', outcome.call.id);
        return outcome;
      },
    );
  }

  private async requestTraced(principal: OrgPrincipal, req: ToolCallRequest, span: Span): Promise<ToolCallOutcome> {
    let claim: IdempotencyClaim | undefined;
    const keyed = req.idempotencyKey === undefined ? undefined : callFingerprint(req);
    if (req.idempotencyKey !== undefined && keyed !== undefined) {
      const key = idempotencyKeyOf(req.entryPoint, req.idempotencyKey);
      const claimed = await this.idempotency.claim(principal.orgId, req.agentId.toLowerCase(), key, keyed.fingerprint, this.leaseMs);
      if (claimed.kind === 'replay') {
        return { status: claimed.status as 200 | 202, call: claimed.body as ToolCallView, replayed: true, resumed: false };
      }
      claim = claimed.claim;
    }
    try {
      const outcome = await this.requestClaimed(principal, req, claim, span, keyed?.argumentsText);
      if (claim && outcome.resumed) await this.idempotency.release(claim);
      return outcome;
    } catch (err) {
      // Refused or broken before anything was recorded: the key is free for a corrected retry.
      if (claim) await this.idempotency.release(claim);
      throw err;
    }
  }

  private async requestClaimed(
    principal: OrgPrincipal,
    req: ToolCallRequest,
    claim: IdempotencyClaim | undefined,
    span: Span,
    argumentsText: string | undefined,
  ): Promise<ToolCallOutcome> {
    // One span for every guard (their outcomes as its attributes), not one per guard: spans are
    // most of what tracing costs a call (docs/benchmarks.md), and a refusal's code already names
    // the guard that refused.
    const guarded = await inGuardsSpan((passed) => this.guard(principal, req, span, passed, argumentsText));
    if ('resumed' in guarded) return guarded.resumed;
    const { runnable, built, tool, validation, argumentsHash, reason } = guarded;
    const orgId = principal.orgId;
    const runId = req.runId ?? null;
    const createdAt = guarded.createdAt;

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
      argumentsHash,
      requestedBy: principal.id,
      createdAt,
    };
    const actor = actorOf(principal);
    const requested: AuditEventInput = {
      type: 'tool_call.requested',
      orgId,
      actor,
      target: { type: 'tool_call', id: call.id },
      data: {
        agentId: call.agentId,
        version: call.version,
        tool: call.tool,
        capabilityId: call.capabilityId,
        toolId: call.toolId,
        runId,
        entryPoint: call.entryPoint,
        argumentsHash: call.argumentsHash,
      },
    };

    if (reason) {
      const approvalId = randomUUID();
      const expiresAt = new Date(createdAt.getTime() + this.config.approvalTtlSeconds * 1000);
      const view = viewOfNewCall(call, 'pending_approval', { approvalId });
      // Counted again with the write, under the organization's lock: the guard's count alone let a burst through (AF-F2).
      const max = this.config.approvalsMaxPendingPerOrg ?? DEFAULT_APPROVALS_MAX_PENDING_PER_ORG;
      let written: boolean | undefined;
      try {
        written = await inSpan(
          'approval gate',
          () =>
            this.storage.withRoomForApproval(orgId, max, (m) =>
              this.store.insertPending(
                call,
                { id: approvalId, reason, expiresAt, awaitingRequester: req.resumePending === true },
                [
                  requested,
                  {
                    type: 'approval.requested',
                    orgId,
                    actor,
                    target: { type: 'approval', id: approvalId },
                    data: {
                      toolCallId: call.id,
                      agentId: call.agentId,
                      tool: call.tool,
                      reason,
                      argumentsHash: call.argumentsHash,
                      expiresAt: expiresAt.toISOString(),
                    },
                  },
                ],
                claim && { ...claim, status: 202, body: view },
                m,
              ),
            ),
          { 'cp.approval.reason': reason },
        );
      } catch (err) {
        // The same call, asked again at the same moment by a requester that waits for it (MCP):
        // the other request's call won the index on awaited calls, and this one waits on it, as
        // it would have had it come a moment later. Nothing of this one was written (one statement).
        if (!req.resumePending || !isUniqueViolation(err, AWAITED_CALL_INDEX)) throw err;
        const resumed = await this.resume(principal, built, tool, argumentsHash);
        if (!resumed) throw err;
        return resumed;
      }
      if (written === undefined) return this.guards.deny(guarded.denial, tooManyPending(max));
      if (!written) return this.guards.deny(guarded.denial, runEnded(runId!));
      this.metrics.toolCall(tool, 'pending_approval');
      return { status: 202, call: view, replayed: false, resumed: false };
    }

    // Fail closed: only a read-only tool ever gets here (approvalReasonOf), so nothing with a side
    // effect can run without first being recorded as running under a lease.
    if (tool.risk !== 'read_only') throw new Error(`invariant: ${tool.capabilityId}/${tool.toolId} (${tool.risk}) reached execution without approval`);
    const outcome = await this.runner.run(runnable, tool, validation.value, call);
    const completedAt = new Date();
    const view = viewOfNewCall(call, outcome.status, { ...settledFields(call.id, outcome), completedAt: completedAt.toISOString() });
    await this.store.insertSettled(
      call,
      outcome,
      completedAt,
      [requested, settledEvent(orgId, actor, call.id, call.argumentsHash, outcome, false)],
      claim && {
        ...claim,
        status: 200,
        body: view,
      },
    );
    return { status: 200, call: view, replayed: false, resumed: false };
  }

  /** Every guard of a new call, in order (see above): what passed them, or the earlier call `resumePending` found. */
  private async guard(
    principal: OrgPrincipal,
    req: ToolCallRequest,
    span: Span,
    passed: string[],
    argumentsText: string | undefined,
  ): Promise<
    | { resumed: ToolCallOutcome }
    | {
        runnable: RunnableVersion;
        built: BuiltVersion;
        tool: VersionTool;
        validation: ValidatedArguments;
        argumentsHash: string;
        reason: ApprovalReason | null;
        createdAt: Date;
        denial: Denial;
      }
  > {
    const orgId = principal.orgId;
    const createdAt = new Date();
    const version = req.version ?? 'latest';
    // The agent, its pointer and the switches, read with the key when the route asked for it.
    const read = principal.type === 'api_key' ? principal.agent : undefined;
    const snapshot = read?.agentId === req.agentId.toLowerCase() && read.version === version ? read : undefined;
    const runnable = await this.implementations.build(
      orgId,
      principal.orgScopes,
      req.agentId,
      version,
      { profile: req.profile, workerType: req.workerType },
      snapshot,
    );
    const built = runnable.built;
    span.setAttribute('cp.agent.version', String(built.version));
    const runId = req.runId ?? null;
    const denial: Denial = {
      principal,
      target: { type: 'agent', id: built.agentId },
      data: { agentId: built.agentId, version: built.version, tool: req.tool, runId, entryPoint: req.entryPoint },
    };

    const tool = built.tools.find((t) => t.name === req.tool);
    if (!tool) return this.guards.deny(denial, missingTool(built, req.tool));
    passed.push('tool_offered');
    denial.tool = tool;
    span.setAttributes({ 'cp.capability.id': tool.capabilityId, 'cp.tool.id': tool.toolId });
    // Validated ahead of the guards that come before it only so that their denials can name the
    // arguments' hash; a refusal still follows the guard order.
    const validation = await this.implementations.validate(tool, req.arguments, orgId);
    const valid = validation.errors.length === 0;
    // Arguments validated as they came (an MCP tool's) were written canonically for their key already.
    const argumentsHash = !valid
      ? undefined
      : argumentsText !== undefined && validation.plain === req.arguments
        ? textHash(argumentsText)
        : canonicalHash(validation.plain);
    if (argumentsHash) denial.data = { ...denial.data, argumentsHash };
    await this.guards.canRunNow(built, tool, denial, snapshot && factsOf(snapshot, built.version, tool));
    passed.push('tool_policy');
    const reason = approvalReasonOf({ risk: tool.risk, interruptBefore: tool.declaration.interruptBefore, toolId: tool.toolId }, built.spec.toolApproval);

    if (valid && reason && req.resumePending) {
      const resumed = await this.resume(principal, built, tool, argumentsHash!);
      if (resumed) return { resumed };
    }

    // A run's calls stop with the run: a step cancelled mid-way asked for every call it had left,
    // approvals too, for a run nobody reads any more (attack round 8, B-F3). Read here for a call
    // that runs at once; a call that waits for approval is written only while the run runs
    // (insertPending), so a cancel committed after this read still wins.
    if (req.entryPoint === 'run' && runId !== null) {
      const status = await this.store.runStatus(orgId, runId);
      if (status !== 'running' && status !== 'waiting_for_approval') return this.guards.deny(denial, runEnded(runId, status));
      passed.push('run');
    }
    // Arguments the organization's storage counts (past 2 KB), once it stores its bound: refused, as a
    // run is not started then, and before the budget, so they spend none of it; a run's own calls go on
    // (a run under way finishes). One agent key stored 37 MB of arguments against a bound of 1 MB,
    // every call `202` (attack round 13, M-F5).
    if (valid && req.entryPoint !== 'run' && countedWeight(validation.plain) && (await this.storage.full(orgId))) {
      return this.guards.deny(
        denial,
        ApiError.conflict(
          `This organization's runs and tool calls store what they may (RUNS_MAX_BYTES_PER_ORG, ${this.storage.maxBytes} bytes): a call whose arguments weigh more than ${UNCOUNTED_ARGUMENT_BYTES} bytes as stored is not recorded. Nothing ran.`,
        ),
      );
    }
    // A call that would wait for a person, once the organization has APPROVALS_MAX_PENDING_PER_ORG
    // waiting: refused before the budget, so it spends none. Nothing bounded them: two agent keys
    // had 84 calls a second wait, each kept a day with its call and events, and every approver's
    // inbox buried under them (attack round 15, Q-F3). A run's own call too: its model reads the
    // refusal and the run goes on (a run waiting for approval holds no place of RUN_MAX_RUNNING_PER_ORG,
    // so runs were a way around the bound, one model call each).
    if (valid && reason) {
      const max = this.config.approvalsMaxPendingPerOrg ?? DEFAULT_APPROVALS_MAX_PENDING_PER_ORG;
      if ((await this.storage.pendingApprovals(orgId, max)) >= max) return this.guards.deny(denial, tooManyPending(max));
    }
    const limit = built.limits.maxToolCallsPerRun;
    if (limit !== undefined && runId !== null) {
      // Invalid arguments reserve nothing, but a run already at its limit still answers 429 first.
      const counted = budgetKeyOf(req.entryPoint, runId);
      const within = valid
        ? await this.store.reserveRunCall(orgId, built.agentId, counted, limit)
        : (await this.store.runCalls(orgId, built.agentId, counted)) < limit;
      if (!within) {
        return this.guards.deny(denial, new ApiError('budget_exceeded', `Run "${runId}" has reached its limit of ${limit} tool calls.`, undefined, { limit }));
      }
      passed.push('budget');
    }
    if (!valid) return this.guards.deny(denial, invalidArguments(validation.errors, validation.omitted));
    passed.push('arguments');
    return { runnable, built, tool, validation, argumentsHash: argumentsHash!, reason, createdAt, denial };
  }

  private async resume(principal: OrgPrincipal, built: BuiltVersion, tool: VersionTool, argumentsHash: string): Promise<ToolCallOutcome | undefined> {
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
      // Handed over once: an identical request that lost the race is a new call.
      if (!(await this.store.markDelivered(principal.orgId, row.id))) return undefined;
      return { status: 200, call: toToolCallView(row), replayed: false, resumed: true };
    }
    return { status: 202, call: toToolCallView(row), replayed: false, resumed: true };
  }
}

/** Approvals of one organization waiting at once when APPROVALS_MAX_PENDING_PER_ORG is unset. */
export const DEFAULT_APPROVALS_MAX_PENDING_PER_ORG = 10_000;

/** The refusal of a call that would wait for approval while the organization has `max` waiting. */
function tooManyPending(max: number): ApiError {
  return new ApiError(
    'rate_limited',
    `This organization has ${max} approvals waiting for a decision, the most it may (APPROVALS_MAX_PENDING_PER_ORG); ask again once some are decided or expired. Nothing was recorded.`,
    undefined,
    { limit: max },
    { 'Retry-After': '60' },
  );
}

/** What a call's arguments may weigh and not count against RUNS_MAX_BYTES_PER_ORG: the table's trigger counts a row past 2 KB of `jsonb`. */
export const UNCOUNTED_ARGUMENT_BYTES = 2048;

/**
 * Whether the trigger will count these arguments: measured as it measures them (`jsonb`), not as
 * JSON text, which let 2,047 characters of zeros through to be counted as 12 KB (W-N1). No value
 * takes more than 12 times its text's length as `jsonb` (a one-digit number and its comma), so short
 * text is not walked.
 */
function countedWeight(args: unknown): boolean {
  const chars = JSON.stringify(args).length;
  return chars > UNCOUNTED_ARGUMENT_BYTES || (chars * 12 > UNCOUNTED_ARGUMENT_BYTES && jsonbSizeOver(args, UNCOUNTED_ARGUMENT_BYTES));
}

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What a call's run budget is counted under. A platform run's calls count under its id, which any
 * agent key of the organization can read; a client's `runId` shaped like a UUID counts apart
 * (`ext:` before it), so a REST or MCP call naming a platform run's id, which is not one of its
 * calls (docs/api.md), cannot spend its budget (attack round 13, M-F3). Client names of other
 * shapes are never a run's id and count as they are.
 */
export function budgetKeyOf(entryPoint: ToolCallRequest['entryPoint'], runId: string): string {
  return entryPoint !== 'run' && UUID_SHAPE.test(runId) ? `ext:${runId}` : runId;
}

/**
 * What an idempotency key is claimed as. A platform run's calls claim `run:<run id>:<step>:<digest>`
 * (toolCallKey); a client's key of that shape, sent over REST, is another key (`client:` before
 * it), so an agent key that read a run's events cannot claim a call's key before the run asks
 * (`422 idempotency_key_reused` for the run, or the client's answer as the run's). The run's keys
 * keep their shape, so runs under way at an upgrade claim what they claimed before.
 */
export function idempotencyKeyOf(entryPoint: ToolCallRequest['entryPoint'], key: string): string {
  return entryPoint !== 'run' && key.startsWith('run:') ? `client:${key}` : key;
}

/** The refusal of a run's call once the run has ended; `runStatus` in its extensions tells the run's engine to ask for no more. */
export function runEnded(runId: string, status?: string): ApiError {
  const why = status ? `is ${status}` : 'has ended';
  return new ApiError('conflict', `The run ${runId} ${why}; its calls are no longer made. Nothing ran.`, undefined, { runStatus: status ?? 'ended' });
}
