import { Injectable } from '@nestjs/common';
import type { BuiltVersion, VersionTool } from '../agents/built-version';
import type { AuditEventInput } from '../audit/audit.service';
import { actorOf, isOrgPrincipal, OrgPrincipal, RequestContext } from '../auth/principal';
import { ApiError, cutText, FieldError } from '../common/api-error';
import { resultRefOf, ToolCallsRepository } from '../tool-calls/tool-calls.repository';
import { MAX_TOOL_NAME_LENGTH, type ToolCallView } from '../tool-calls/tool-calls.dto';
import type { ToolOutcome } from './run-tool';
import { GovernanceRepository } from '../governance/governance.repository';
import { GovernanceFacts, whyCannotRun } from './tool-policy';
import { Metrics } from '../telemetry/metrics';

/** Who is refused, about what, and the facts the `tool_call.denied` event records. */
export interface Denial {
  principal: OrgPrincipal;
  target: { type: 'agent' | 'tool_call'; id: string };
  data: Record<string, unknown>;
  /** The declared tool, once the version offered one (metric labels; never the offered name). */
  tool?: { capabilityId: string; toolId: string };
}

/**
 * The guards the request path and the approval path share, and the one way a refusal is
 * recorded: every refusal of a guard is audited as `tool_call.denied` with its code.
 */
@Injectable()
export class ToolCallGuards {
  constructor(
    private readonly store: ToolCallsRepository,
    private readonly metrics: Metrics,
    private readonly governance: GovernanceRepository,
  ) {}

  /**
   * The tool policy's "can it run now", as the executor's refusals (409 tool_definition_changed,
   * 403 scope_not_granted). `read`: the switches as this request already read them (with the key).
   */
  async canRunNow(built: BuiltVersion, tool: VersionTool, denial: Denial, read?: GovernanceFacts): Promise<void> {
    // The switches are read on every call, on every node: an incident response takes effect at once.
    const facts = read ?? (await this.governance.factsFor(denial.principal.orgId, built.agentId, built.version, tool.capabilityId, tool.toolId));
    const why = whyCannotRun(tool, denial.principal.orgScopes, facts);
    if (why?.code === 'version_retired') {
      await this.deny(denial, new ApiError('version_retired', `Version ${built.version} of this agent was retired; call a current version. Nothing ran.`));
    }
    if (why?.code === 'tool_disabled') {
      const reason = why.reason ? ` (${why.reason})` : '';
      await this.deny(
        denial,
        new ApiError('tool_disabled', `An administrator disabled "${tool.name}" for this organization${reason}. Nothing ran.`, undefined, {
          reason: why.reason,
        }),
      );
    }
    if (why?.code === 'tool_definition_changed') {
      await this.deny(
        denial,
        new ApiError(
          'tool_definition_changed',
          `The definition of "${tool.name}" changed since version ${built.version} was published; publish the agent again. Nothing ran.`,
        ),
      );
    }
    if (why?.code === 'scope_not_granted') {
      const missing = why.missingScopes;
      await this.deny(
        denial,
        new ApiError('scope_not_granted', `The organization lacks scopes that "${tool.capabilityId}" needs: ${missing.join(', ')}. Nothing ran.`, undefined, {
          missingScopes: missing,
        }),
      );
    }
  }

  /** Records the refusal (`tool_call.denied`) and throws it. */
  async deny(d: Denial, error: ApiError): Promise<never> {
    this.metrics.toolCall(d.tool, 'denied', { reason: error.code });
    await this.store.recordEvents([
      {
        type: 'tool_call.denied',
        orgId: d.principal.orgId,
        actor: actorOf(d.principal),
        target: d.target,
        data: {
          ...d.data,
          // The name as asked: a model in a run (not a body, so not validated) may send any length.
          ...(typeof d.data.tool === 'string' ? { tool: cutText(d.data.tool, MAX_TOOL_NAME_LENGTH + 1) } : {}),
          code: error.code,
          detail: error.detail,
          ...auditedErrors(error),
        },
      },
    ]);
    throw error;
  }
}

/** The errors of a refusal its `tool_call.denied` event keeps, each of its texts cut to this many characters. */
export const AUDITED_ERRORS = 5;
export const AUDITED_ERROR_TEXT_CHARS = 200;

/**
 * The first few errors of a refusal and how many were left out, as its audit event keeps them. The
 * caller is answered up to 50 (ApiError), but the append-only log keeps every refusal: 50 entries of
 * argument names in control characters (six characters each as JSON) made one event 211 KB, so one
 * agent key's refusals wrote the log as fast as it could send them. An event now weighs at most a
 * few KB whatever the request held; the answer still tells the caller every error.
 */
export function auditedErrors(error: ApiError): { errors?: FieldError[]; errorsOmitted?: number } {
  const answered = typeof error.extensions?.errorsOmitted === 'number' ? error.extensions.errorsOmitted : 0;
  if (!error.errors) return answered > 0 ? { errorsOmitted: answered } : {};
  const kept = error.errors.slice(0, AUDITED_ERRORS).map((e) => ({
    ...e,
    path: cutText(e.path, AUDITED_ERROR_TEXT_CHARS),
    message: cutText(e.message, AUDITED_ERROR_TEXT_CHARS),
    ...(e.code === undefined ? {} : { code: cutText(e.code, AUDITED_ERROR_TEXT_CHARS) }),
  }));
  const omitted = answered + error.errors.length - kept.length;
  return omitted > 0 ? { errors: kept, errorsOmitted: omitted } : { errors: kept };
}

export function keyOf(ctx: RequestContext): OrgPrincipal {
  if (!isOrgPrincipal(ctx.principal)) throw ApiError.forbidden("Only an organization's API key or member can run tools.");
  return ctx.principal;
}

/**
 * A name the version pinned at publish but the code no longer builds is drift (`removed`), refused
 * like a changed definition (API.md); a name it never offered is unknown.
 */
export function missingTool(built: BuiltVersion, name: string): ApiError {
  if (Object.prototype.hasOwnProperty.call(built.pinnedTools, name)) {
    return new ApiError(
      'tool_definition_changed',
      `The code no longer offers "${name}", which version ${built.version} was published with; publish the agent again. Nothing ran.`,
    );
  }
  return new ApiError('unknown_tool', `Version ${built.version} of this agent offers no tool named "${name}".`);
}

export function invalidArguments(errors: FieldError[], omitted = 0): ApiError {
  return new ApiError(
    'invalid_arguments',
    "The arguments do not match the tool's input schema; nothing ran.",
    errors.map((e) => ({ ...e, path: e.path ? `arguments.${e.path}` : 'arguments' })),
    { errorsOmitted: omitted },
  );
}

export function settledFields(callId: string, outcome: ToolOutcome): Partial<ToolCallView> {
  if (outcome.status === 'failed') return { error: outcome.error };
  return { result: outcome.result, resultTruncated: outcome.truncated, ...(outcome.offloaded ? { resultRef: resultRefOf(callId) } : {}) };
}

export function settledEvent(
  orgId: string,
  actor: { type: string; id: string },
  callId: string,
  argumentsHash: string,
  outcome: ToolOutcome,
  edited: boolean,
): AuditEventInput {
  return outcome.status === 'succeeded'
    ? {
        type: 'tool_call.succeeded',
        orgId,
        actor,
        target: { type: 'tool_call', id: callId },
        data: {
          argumentsHash,
          resultTruncated: outcome.truncated,
          ...(outcome.offloaded ? { resultRef: resultRefOf(callId) } : {}),
          ...(edited ? { argumentsEdited: true } : {}),
        },
      }
    : {
        type: 'tool_call.failed',
        orgId,
        actor,
        target: { type: 'tool_call', id: callId },
        data: { argumentsHash, error: { code: outcome.error.code }, ...(edited ? { argumentsEdited: true } : {}) },
      };
}
