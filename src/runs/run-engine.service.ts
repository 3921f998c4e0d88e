// Longer than 300 lines because one step of the run loop (load, compact, call the model, run its
// tool calls through the executor, persist) reads best as one state machine in one place.
import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../common/json-depth';
import { jsonShapeRefusal } from '../common/json-shape';
import { findUnstorableNumber, mayHoldUnstorableNumber } from '../common/json-numbers';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { BuiltVersion } from '../agents/built-version';
import { VersionBuilder } from '../agents/version-builder.service';
import type { AuditEventInput } from '../audit/audit.service';
import { ApiKeysRepository } from '../auth/api-keys.repository';
import type { ApiKeyPrincipal, RequestContext } from '../auth/principal';
import type { ThinkingEffort } from '../capabilities/builtin/thinking/thinking.config';
import { ApiError } from '../common/api-error';
import { mapBounded } from '../common/bounded-map';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { SETTLED_STATUSES, ToolExecutor } from '../runtime/tool-executor.service';
import { canRunNow } from '../runtime/tool-policy';
import { toToolCallView } from '../tool-calls/tool-call-rows';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { CancelledRunApprovals } from './cancelled-run-approvals';
import {
  ChatMessage,
  CompactionSettings,
  CompactionState,
  compactWithoutModel,
  estimateTokens,
  keptFrom,
  MAX_TRANSCRIPT_CHARS,
  toProviderMessages,
  transcriptChars,
  transcriptOf,
} from './conversation';
import { ChatModel, ModelError, ModelRetry, ModelTurn } from './model-client';
import { ModelProvidersService } from './model-providers.service';
import { RunSignals } from './run-signals';
import { KEY_NOT_ACCEPTED, PendingCall, RunEventInput, RunPatch, RunRow, RunsRepository, RunUsage } from './runs.repository';
import { SecretOpenError } from '../secrets/secrets.service';

/** When the model's window is not given: a common size today, and what compaction aims under. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** How many times a read-only call cut off by a node's death runs again before the run waits for its claim's lock instead. */
const MAX_READ_ONLY_RERUNS = 4;

/** Who acts for a run in the audit log when no request is being served. */
const RUN_ACTOR = (runId: string) => ({ type: 'run', id: runId });

type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;

/** Why a step stopped before the run finished or paused: it is claimed again later (this node or another). */
class RetryLater extends Error {
  constructor(
    readonly afterMs: number,
    /** The model's failed attempts in a row so far, when that is why (kept on the run for the next claim). */
    readonly modelAttempts?: number,
  ) {
    super('retry later');
  }
}

/**
 * A model request to try again: the run gives its slot back and waits with no node holding it. A
 * provider that never answers costs each attempt its whole RUN_MODEL_TIMEOUT_MS; held through every
 * attempt and back-off, one run kept a slot for minutes, and a few organizations whose providers
 * hang held every slot of a node (fuzz session 29). Between attempts, others take the slot.
 */
function modelRetryLater(err: ModelRetry, row: RunRow): RetryLater {
  return new RetryLater(err.afterMs, row.model_attempts + 1);
}

/**
 * How many tool calls of one answer go to the executor at once. Each takes database connections
 * (claim, guards, record): one answer must leave the pool to the node's other runs and requests.
 */
export const MAX_PARALLEL_TOOL_CALLS = 4;

/** RUN_MAX_REFUSED_CALLS when the configuration does not say (src/config/runs-config.ts says why). */
export const DEFAULT_MAX_REFUSED_CALLS = 64;

/** A run's usage as answered and audited: without its own count of refused calls. */
function answeredUsage({ refusedCalls: _, ...usage }: RunUsage): RunUsage {
  return usage;
}

/** Steps failed in a row on an error of ours before the run fails with `internal_error`. */
export const MAX_STEP_FAILURES = 5;
/** A failed step is tried again after this many polls (5 s by default). */
const STEP_RETRY_POLLS = 5;

/** An error as logged: without a failed statement's parameters, which hold the run's whole conversation. */
function withoutParameters(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const { query } = err as { query?: unknown };
  return { type: err.name, message: err.message, stack: err.stack, ...(typeof query === 'string' ? { query } : {}) };
}

/**
 * Steps a run while this node holds its lease: model call, the tool calls it asks for (through the
 * executor, each keyed by run, step and the model's call id so that a takeover replays instead of
 * running again), pause, resume. Every step is written before the next begins, conditional on the
 * lease; a write that matches nothing means another node (or a cancel) has the run, and this node
 * stops.
 */
@Injectable()
export class RunEngine {
  private readonly logger = new Logger(RunEngine.name);

  constructor(
    private readonly repo: RunsRepository,
    private readonly executor: ToolExecutor,
    private readonly calls: ToolCallsRepository,
    private readonly versions: VersionBuilder,
    private readonly providers: ModelProvidersService,
    private readonly signals: RunSignals,
    private readonly cancelledApprovals: CancelledRunApprovals,
    private readonly apiKeys: ApiKeysRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Advances the run until it finishes, pauses, or the lease is lost (`signal`). Never throws for the run's own failures. */
  async advance(runId: string, owner: string, signal: AbortSignal): Promise<void> {
    try {
      await this.loop(runId, owner, signal);
    } catch (err) {
      if (err instanceof RetryLater) {
        await this.repo.release(runId, owner, new Date(Date.now() + err.afterMs), err.modelAttempts);
        return;
      }
      if (signal.aborted) return;
      // A bug of ours, or the database gone: give the run back; another attempt starts from the last
      // write. An error the next attempt repeats would retry (and call the model) for ever, so after
      // a few in a row the run fails instead. The statement's parameters (the whole conversation) stay out of the log.
      const failures = await this.repo.countStepFailure(runId, owner).catch(() => 0);
      const stop = failures >= MAX_STEP_FAILURES;
      // The model provider's API key sealed under a key this node does not hold: retried (another
      // node may hold it), and said as such to the operator and, at the end, in the run.
      const unreadable = err instanceof SecretOpenError;
      this.logger.error(
        { err: withoutParameters(err), runId, failures },
        `${unreadable ? "the model provider's stored API key cannot be opened (sealed under a secrets key this node does not hold): " : ''}${stop ? 'run step failed again; the run is stopped' : 'run step failed; it will be retried'}`,
      );
      if (stop && (await this.stop(runId, owner, failures, unreadable).catch(() => false))) return;
      await this.repo.release(runId, owner, new Date(Date.now() + STEP_RETRY_POLLS * this.config.runs.pollIntervalMs)).catch(() => undefined);
    } finally {
      this.signals.notify(runId);
    }
  }

  private async loop(runId: string, owner: string, signal: AbortSignal): Promise<void> {
    let row = await this.repo.findLeased(runId, owner);
    if (!row || (row.status !== 'running' && row.status !== 'waiting_for_approval')) return;
    const principal = await this.principalOf(row);
    if (!principal) {
      await this.finish(row, owner, 'failed', { error: { ...KEY_NOT_ACCEPTED } });
      return;
    }
    const ctx: RequestContext & { principal: ApiKeyPrincipal } = { principal, requestId: `run:${row.id}` };
    let built: BuiltVersion;
    try {
      built = await this.versions.build(row.org_id, principal.orgScopes, row.agent_id, row.version, undefined, { applicability: applicabilityOf(row) });
    } catch (err) {
      if (err instanceof ApiError) {
        await this.finish(row, owner, 'failed', { error: { code: err.code, message: err.detail } });
        return;
      }
      throw err;
    }
    const modelRef = built.spec.model;
    const model = modelRef ? await this.providers.modelFor(row.org_id, modelRef.provider) : undefined;
    if (!modelRef || !model) {
      await this.finish(row, owner, 'failed', {
        error: { code: 'model_not_configured', message: 'The version names no model provider of this organization.' },
      });
      return;
    }
    // Only what can run now, as MCP's tools/list does: a drifted tool's new description (a vendor's
    // rug pull) must not reach the model, and a call of it would be refused anyway.
    const offered = (scopes: readonly string[]): ChatCompletionTool[] =>
      built.tools
        .filter((t) => canRunNow(t, scopes))
        .map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.inputSchema },
        }));
    let tools = offered(principal.orgScopes);

    if (row.status === 'waiting_for_approval') {
      if (!(await this.save(row, owner, { status: 'running' }, [{ type: 'run.resumed', data: {} }]))) return;
      row = { ...row, status: 'running' };
    }

    for (let pass = 0; ; pass++) {
      if (signal.aborted) return;
      // The key and the organization's scopes are judged at every step, not only when the run was
      // claimed: nothing ends a run when its key expires, and it went on calling the model and running
      // tools to RUN_MAX_STEPS (V-F1), with tools of a scope the platform had removed since (V-F5).
      if (pass > 0) {
        const now = await this.principalOf(row);
        if (!now) {
          await this.finish(row, owner, 'failed', { error: { ...KEY_NOT_ACCEPTED } });
          return;
        }
        if (now.orgScopes.join(' ') !== ctx.principal.orgScopes.join(' ')) tools = offered(now.orgScopes);
        ctx.principal = now;
      }
      if (row.pending.length > 0) {
        const next = await this.settlePending(ctx, row, owner, built, signal);
        if (!next) return;
        row = next;
        continue;
      }
      const last = row.messages[row.messages.length - 1];
      if (last?.role === 'assistant' && !last.toolCalls?.length) {
        // Answered before a node died between writing the answer and finishing: finish now.
        await this.finish(row, owner, 'succeeded', { output: last.content ?? '' });
        return;
      }
      if ((row.usage.refusedCalls ?? 0) >= this.maxRefusedCalls()) {
        await this.finish(row, owner, 'failed', {
          error: {
            code: 'too_many_refused_calls',
            message: `The run's model asked for ${row.usage.refusedCalls} tool calls that were refused, the most a run may (RUN_MAX_REFUSED_CALLS).`,
          },
        });
        return;
      }
      if (row.usage.modelCalls >= this.config.runs.maxSteps) {
        await this.finish(row, owner, 'failed', {
          error: { code: 'max_steps', message: `The run reached its limit of ${this.config.runs.maxSteps} model calls (RUN_MAX_STEPS).` },
        });
        return;
      }
      if (transcriptChars(row.messages) > MAX_TRANSCRIPT_CHARS) {
        await this.finish(row, owner, 'failed', {
          error: {
            code: 'transcript_too_large',
            message: `The run's messages passed ${MAX_TRANSCRIPT_CHARS} characters (as JSON writes them); it takes no further step.`,
          },
        });
        return;
      }

      const compaction = await this.compact(row, owner, built, model, modelRef.name, tools, signal, false);
      if (compaction === false) return;
      row = compaction;

      let turn: ModelTurn;
      try {
        turn = await model.attempt(
          {
            model: modelRef.name,
            messages: toProviderMessages(built.systemPrompt, row.messages, row.compaction),
            tools,
            temperature: modelRef.temperature,
            maxOutputTokens: modelRef.maxOutputTokens,
            reasoningEffort: effortOf(built),
            signal,
          },
          row.model_attempts,
        );
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ModelRetry) throw modelRetryLater(err, row);
        if (err instanceof ModelError && err.code === 'context_length_exceeded') {
          // Our estimate was short of the provider's count: compact now if the strategy can, and ask again.
          const compacted = await this.compact(row, owner, built, model, modelRef.name, tools, signal, true);
          if (compacted === false) return;
          if (compacted !== row) {
            row = compacted;
            continue;
          }
        }
        if (err instanceof ModelError) {
          await this.finish(row, owner, 'failed', {
            error: { code: err.code, message: err.message },
            usage: { ...row.usage, modelCalls: row.usage.modelCalls + 1 },
          });
          return;
        }
        throw err;
      }

      const step = row.usage.modelCalls + 1;
      const usage = {
        ...row.usage,
        modelCalls: step,
        inputTokens: row.usage.inputTokens + turn.usage.inputTokens,
        outputTokens: row.usage.outputTokens + turn.usage.outputTokens,
      };
      const assistant: ChatMessage = { role: 'assistant', content: turn.content, ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}) };
      const messages = [...row.messages, assistant];
      const completed: RunEventInput = {
        type: 'model.completed',
        data: {
          step,
          content: turn.content,
          toolCalls: turn.toolCalls.map((c) => ({ id: c.id, name: c.name })),
          finishReason: turn.finishReason,
          usage: turn.usage,
        },
      };
      if (turn.toolCalls.length === 0) {
        await this.finish({ ...row, messages, usage }, owner, 'succeeded', { output: turn.content ?? '', messages, usage }, [completed]);
        return;
      }
      const pending: PendingCall[] = turn.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, step }));
      if (!(await this.save(row, owner, { messages, usage, pending }, [completed]))) return;
      row = { ...row, messages, usage, pending };
    }
  }

  /**
   * Runs (through the executor) or looks up the tool calls of the model's last answer. Answers the
   * run to continue with, or undefined when it paused or is no longer ours.
   */
  private async settlePending(ctx: RequestContext, row: RunRow, owner: string, built: BuiltVersion, signal: AbortSignal): Promise<RunRow | undefined> {
    const events: RunEventInput[] = [];
    const newCallIds: string[] = [];
    let retryAfter = 0;
    // Set when the executor says the run has ended (cancelled on another node, or its key revoked
    // before this node's lease renewal noticed): the calls left are not asked for, as on `signal`.
    let ended = false;
    // Past the run's refused calls (checked before each call is asked for, so those running side by
    // side may pass it by a few), the rest are answered refused here: neither asked for nor audited.
    let refused = row.usage.refusedCalls ?? 0;
    const maxRefused = this.maxRefusedCalls();
    // Parallel tool calls of one answer run side by side (a few at a time); each passes every guard on its own.
    const pending = await mapBounded(row.pending, MAX_PARALLEL_TOOL_CALLS, async (p): Promise<PendingCall> => {
      if (p.result) return p;
      if (p.toolCallId) {
        const stored = await this.calls.findCall(row.org_id, p.toolCallId);
        // Recorded for this run by the executor, so it exists; not finding it is the database's problem.
        if (!stored) throw new Error(`tool call ${p.toolCallId} of run ${row.id} is missing`);
        return this.fromCall(p, toToolCallView(stored), events);
      }
      // Cancelled (here, or seen at the lease's renewal) or shutting down: a call under way may
      // finish, no new one starts (attack round 8, B-F3: a step went on for minutes after its cancel).
      if (signal.aborted || ended) return p;
      if (refused >= maxRefused) {
        const refusal = {
          code: 'too_many_refused_calls',
          message: `The run's model asked for ${refused} calls that were refused (RUN_MAX_REFUSED_CALLS); nothing ran, and the run ends.`,
        };
        events.push({ type: 'tool_call.failed', data: { modelCallId: p.id, name: p.name, error: { code: refusal.code } } });
        return { ...p, result: toolMessage(p, { error: refusal }) };
      }
      const outcome = await this.request(ctx, row, p, built);
      if (outcome === 'ended') {
        ended = true;
        return p;
      }
      if (outcome === 'retry') {
        retryAfter = 1000;
        return p;
      }
      if ('refusal' in outcome) {
        refused++;
        events.push({ type: 'tool_call.failed', data: { modelCallId: p.id, name: p.name, error: { code: outcome.refusal.code } } });
        return { ...p, result: toolMessage(p, { error: outcome.refusal }) };
      }
      const call = outcome.call;
      newCallIds.push(call.id);
      events.push({ type: 'tool_call.requested', data: { toolCallId: call.id, modelCallId: p.id, name: p.name } });
      if (call.approvalId && call.status === 'pending_approval') {
        events.push({ type: 'approval.requested', data: { approvalId: call.approvalId, toolCallId: call.id, name: p.name } });
      }
      return this.fromCall({ ...p, toolCallId: call.id, approvalId: call.approvalId }, call, events);
    });

    const toolCallIds = [...row.tool_call_ids, ...newCallIds.filter((id) => !row.tool_call_ids.includes(id))];
    const usage = { ...row.usage, toolCalls: toolCallIds.length, ...(refused > 0 ? { refusedCalls: refused } : {}) };
    if (signal.aborted || ended) {
      // The calls made are written while the run is still ours (a shutdown: the next node asks for
      // the rest); a cancelled run's write matches nothing and `save` records them on the ended run.
      await this.save(row, owner, { pending, toolCallIds, usage }, events);
      return undefined;
    }
    const waiting = pending.filter((p) => !p.result && p.toolCallId);
    if (retryAfter > 0 && waiting.length === 0 && pending.some((p) => !p.result)) {
      await this.save(row, owner, { pending, toolCallIds, usage }, events);
      throw new RetryLater(retryAfter);
    }
    if (waiting.length > 0 || retryAfter > 0) {
      const pendingToolCallIds = waiting.map((p) => p.toolCallId!);
      const pendingApprovalIds = waiting.map((p) => p.approvalId).filter((id): id is string => Boolean(id));
      events.push({ type: 'run.waiting', data: { pendingApprovalIds, toolCallIds: pendingToolCallIds } });
      await this.save(
        row,
        owner,
        { status: 'waiting_for_approval', pending, toolCallIds, usage, pendingToolCallIds, pendingApprovalIds, release: true },
        events,
      );
      return undefined;
    }
    // Every call has its answer: the tool messages go into the conversation in the model's order.
    const messages = [...row.messages, ...pending.map((p) => p.result!)];
    const patch: RunPatch = { messages, pending: [], toolCallIds, usage, pendingToolCallIds: [], pendingApprovalIds: [] };
    if (!(await this.save(row, owner, patch, events))) return undefined;
    return { ...row, messages, pending: [], tool_call_ids: toolCallIds, usage, pending_approval_ids: [] };
  }

  private fromCall(p: PendingCall, call: ToolCallView, events: RunEventInput[]): PendingCall {
    if (!SETTLED_STATUSES.has(call.status)) return p;
    if (call.status === 'succeeded') {
      events.push({ type: 'tool_call.succeeded', data: { toolCallId: call.id, name: p.name } });
      const body: Record<string, unknown> = { result: call.result };
      if (call.resultTruncated) body.note = "The result was cut to the tool's output budget.";
      if (call.argumentsEdited) {
        body.argumentsEdited = true;
        body.executedArguments = call.executedArguments;
        body.note = [body.note, 'A person edited the arguments before the tool ran; it ran with executedArguments.'].filter(Boolean).join(' ');
      }
      const plain = typeof call.result === 'string' && Object.keys(body).length === 1;
      return { ...p, result: { role: 'tool', toolCallId: p.id, name: p.name, content: plain ? (call.result as string) : JSON.stringify(body) } };
    }
    events.push({
      type: 'tool_call.failed',
      data: { toolCallId: call.id, name: p.name, status: call.status, error: call.error ? { code: call.error.code } : undefined },
    });
    const error = call.error ?? { code: call.status, message: `The call ended ${call.status}.` };
    return { ...p, result: toolMessage(p, { error: { code: error.code, message: error.message } }) };
  }

  /**
   * The executor's answer to one model tool call, a refusal the model reads, `retry` (the call's key
   * is held by a request in progress), or `ended` (the run is no longer running; nothing ran).
   */
  private async request(
    ctx: RequestContext,
    row: RunRow,
    p: PendingCall,
    built: BuiltVersion,
  ): Promise<{ call: ToolCallView } | { refusal: { code: string; message: string; errors?: unknown } } | 'retry' | 'ended'> {
    let args: unknown;
    // Held to a request body's depth (walked deeper, validation ran out of stack and the step failed
    // as the platform's error) and names (their parse held the event loop, src/common/json-depth.ts).
    const refused = jsonShapeRefusal(p.arguments, MAX_JSON_DEPTH, MAX_JSON_KEYS);
    if (refused !== null) {
      const why = refused === 'depth' ? `nest deeper than ${MAX_JSON_DEPTH} levels` : `name more than ${MAX_JSON_KEYS} distinct members (object keys)`;
      return { refusal: { code: 'invalid_arguments', message: `The arguments ${why}; nothing ran.` } };
    }
    try {
      args = JSON.parse(p.arguments === '' ? '{}' : p.arguments);
    } catch {
      return {
        refusal: {
          code: 'invalid_arguments',
          message: "The arguments are not JSON; nothing ran. Send them as a JSON object that matches the tool's input schema.",
        },
      };
    }
    // Numbers PostgreSQL would print far longer than the model wrote them (`5e-324`: 326 characters),
    // as a body's are refused at parse (row 134): a model's answer of 2,000,000 characters of them
    // was stored as hundreds of megabytes, read back with every read of the run's calls.
    const growing = mayHoldUnstorableNumber(p.arguments) ? findUnstorableNumber(args, 'arguments') : undefined;
    if (growing)
      return { refusal: { code: 'invalid_arguments', message: 'The arguments hold a number no column stores as written; nothing ran.', errors: [growing] } };
    // A key held "in progress" means a node that stepped this run before us (dead, or too slow to
    // keep its lease) was between claiming the call and recording it. What happens next is the
    // tool's risk: a tool that runs without approval only reads (the tool policy), so it runs again
    // under the next key of a fixed chain; anything else waits for the claim's lock to pass, because
    // a call that needs approval is recorded before it can run, and must never be asked for twice.
    const offered = built.tools.find((t) => t.name === p.name);
    const rerunnable = offered !== undefined && offered.risk === 'read_only' && !offered.requiresApproval;
    for (let attempt = 0; attempt <= MAX_READ_ONLY_RERUNS; attempt++) {
      try {
        const outcome = await this.executor.request(ctx, {
          agentId: row.agent_id,
          tool: p.name,
          arguments: args,
          version: built.version,
          runId: row.id,
          profile: row.profile ?? undefined,
          workerType: row.worker_type ?? undefined,
          entryPoint: 'run',
          idempotencyKey: toolCallKey(row.id, p, attempt),
        });
        return { call: outcome.call };
      } catch (err) {
        if (err instanceof ApiError) {
          if (err.code === 'idempotency_in_progress') {
            if (rerunnable) continue;
            return 'retry';
          }
          if (err.extensions?.runStatus !== undefined) return 'ended';
          return { refusal: { code: err.code, message: err.detail, ...(err.errors ? { errors: err.errors } : {}) } };
        }
        throw err;
      }
    }
    // Every key of the chain is held: nodes keep dying on this call. Wait for the first lock to pass.
    return 'retry';
  }

  /**
   * Applies the agent's compaction when the conversation would not fit the model's window with
   * room for an answer. Answers the run to go on with, or false when it is no longer ours.
   */
  private async compact(
    row: RunRow,
    owner: string,
    built: BuiltVersion,
    model: ChatModel,
    modelName: string,
    tools: ChatCompletionTool[],
    signal: AbortSignal,
    force: boolean,
  ): Promise<RunRow | false> {
    const settings = compactionOf(built);
    if (!settings) return row;
    const window = built.spec.model?.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
    const budget = window - (built.spec.model?.maxOutputTokens ?? Math.min(4096, Math.floor(window / 4)));
    const size = estimateTokens(toProviderMessages(built.systemPrompt, row.messages, row.compaction), tools);
    if (size <= budget && !force) return row;

    let next: CompactionState | null;
    let usage = row.usage;
    if (settings.strategy === 'summarize') {
      const from = keptFrom(row.messages, settings.keepLastTurns);
      const start = row.compaction?.before ?? 0;
      if (from <= start) return row;
      try {
        const summary = await model.attempt(
          {
            model: modelName,
            messages: [
              { role: 'system', content: settings.summaryPrompt ?? '' },
              { role: 'user', content: transcriptOf(row.messages, start, from, row.compaction?.summary) },
            ],
            tools: [],
            signal,
          },
          row.model_attempts,
        );
        usage = {
          ...usage,
          inputTokens: usage.inputTokens + summary.usage.inputTokens,
          outputTokens: usage.outputTokens + summary.usage.outputTokens,
        };
        next = { before: from, summary: summary.content ?? '' };
      } catch (err) {
        if (signal.aborted) return false;
        if (err instanceof ModelRetry) throw modelRetryLater(err, row);
        if (err instanceof ModelError) {
          await this.finish(row, owner, 'failed', { error: { code: 'model_error', message: `Summarizing the conversation failed: ${err.message}` } });
          return false;
        }
        throw err;
      }
    } else {
      next = compactWithoutModel(row.messages, settings, row.compaction);
    }
    if (!next) return row;
    const event: RunEventInput = {
      type: 'run.compacted',
      data: { strategy: settings.strategy, estimatedTokens: size, budget, before: next.before, clearedBefore: next.clearedBefore },
    };
    if (!(await this.save(row, owner, { compaction: next, usage }, [event]))) return false;
    return { ...row, compaction: next, usage };
  }

  private maxRefusedCalls(): number {
    return this.config.runs.maxRefusedCalls ?? DEFAULT_MAX_REFUSED_CALLS;
  }

  private async finish(
    row: RunRow,
    owner: string,
    status: 'succeeded' | 'failed',
    patch: Omit<RunPatch, 'status' | 'release'>,
    events: RunEventInput[] = [],
  ): Promise<void> {
    const type = status === 'succeeded' ? 'run.succeeded' : 'run.failed';
    const data = status === 'succeeded' ? { output: patch.output ?? '' } : { error: patch.error };
    const audit: AuditEventInput = {
      type,
      orgId: row.org_id,
      actor: RUN_ACTOR(row.id),
      target: { type: 'run', id: row.id },
      data: {
        agentId: row.agent_id,
        version: row.version,
        usage: answeredUsage(patch.usage ?? row.usage),
        ...(status === 'failed' ? { error: { code: patch.error?.code } } : {}),
      },
    };
    await this.save(
      row,
      owner,
      { ...patch, status, release: true, pending: [], pendingToolCallIds: [], pendingApprovalIds: [] },
      [...events, { type, data }],
      [audit],
    );
  }

  private async save(row: RunRow, owner: string, patch: RunPatch, events: RunEventInput[], audit: AuditEventInput[] = []): Promise<boolean> {
    const saved = await this.repo.save(row, owner, patch, events, audit);
    this.signals.notify(row.id);
    // Cancelled, or its key revoked, while this step's tools ran: they ran under the run's id all the
    // same, and a run's record counts every call made for it (the repository adds only to an ended run).
    if (!saved && patch.toolCallIds?.length) await this.repo.recordCallsOfEndedRun(row.org_id, row.id, patch.toolCallIds);
    if (!saved && patch.pending?.some((p) => p.approvalId && !p.result)) {
      // Cancelled, or its key revoked, while this step was asking for approvals: that change may have
      // looked for pending approvals before these were recorded, so they are settled here, as it would have.
      const ended = await this.repo.endedEarly(row.org_id, row.id);
      const run = { id: row.id, agentId: row.agent_id };
      if (ended?.cause === 'run_cancelled') {
        await this.cancelledApprovals.settle(row.org_id, run, { cause: 'run_cancelled', actor: { type: 'api_key', id: ended.by }, keyId: ended.by });
      } else if (ended?.cause === 'api_key_revoked') {
        // Whoever revoked the key is in the audit log beside; the run is the actor here, as when it fails by itself.
        await this.cancelledApprovals.settle(row.org_id, run, { cause: 'api_key_revoked', actor: RUN_ACTOR(row.id), keyId: ended.keyId });
      }
    }
    return saved;
  }

  private async stop(runId: string, owner: string, failures: number, unreadableKey: boolean): Promise<boolean> {
    const row = await this.repo.findLeased(runId, owner);
    if (!row || (row.status !== 'running' && row.status !== 'waiting_for_approval')) return false;
    const why = unreadableKey
      ? "the platform cannot open the model provider's stored API key (sealed under a secrets key the server does not hold; the operator has been told)"
      : "an error of the platform (the server's log has each, with the run's id)";
    await this.finish(row, owner, 'failed', {
      error: {
        code: 'internal_error',
        message: `A step of the run failed ${failures} times in a row on ${why}; the run was stopped rather than tried again.`,
      },
    });
    return true;
  }

  private async principalOf(row: RunRow): Promise<ApiKeyPrincipal | undefined> {
    const k = await this.apiKeys.findActiveById(row.org_id, row.requested_by);
    // The organization's scopes as they are now: a scope revoked mid-run stops the tools that need it.
    return (
      k && {
        type: 'api_key',
        id: k.id,
        orgId: k.org_id,
        roles: k.roles,
        orgScopes: k.scopes,
        ...(k.expires_at ? { expiresAt: new Date(k.expires_at).getTime() } : {}),
        ...(k.agent_ids ? { agentIds: k.agent_ids } : {}),
      }
    );
  }
}

/**
 * The one tool call of a model tool call: the run, the model call that asked, and the model's id
 * for it (some models reuse ids across answers). `rerun` > 0 names the read-only call run again
 * after a node died while running it (see `request`): a fixed chain, so that a node taking over
 * after that finds the rerun's answer too.
 */
export function toolCallKey(runId: string, p: Pick<PendingCall, 'id' | 'step'>, rerun = 0): string {
  const key = `run:${runId}:${p.step}:${createHash('sha256').update(p.id).digest('hex').slice(0, 40)}`;
  return rerun === 0 ? key : `${key}:rerun-${rerun}`;
}

function toolMessage(p: PendingCall, body: Record<string, unknown>): ToolMessage {
  return { role: 'tool', toolCallId: p.id, name: p.name, content: JSON.stringify(body) };
}

function applicabilityOf(row: RunRow): { profile?: string; workerType?: string } {
  return { profile: row.profile ?? undefined, workerType: row.worker_type ?? undefined };
}

function effortOf(built: BuiltVersion): ThinkingEffort | undefined {
  const thinking = built.settings.thinking as { effort?: ThinkingEffort } | undefined;
  return thinking?.effort;
}

function compactionOf(built: BuiltVersion): CompactionSettings | undefined {
  const c = built.settings.compaction as CompactionSettings | undefined;
  return c && typeof c.strategy === 'string' && typeof c.keepLastTurns === 'number' ? c : undefined;
}
