import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { ServerContext } from '@modelcontextprotocol/server';
import type { FastifyInstance } from 'fastify';
import { CredentialWatch } from '../auth/credential-watch.service';
import type { Principal } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { HeldRequests } from '../common/held-requests';
import { OrgHolds } from '../common/org-holds';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DecisionWaiter } from '../runtime/decision-waiter.service';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';

const PROGRESS_EVERY_MS = 1000;
export const DEFAULT_MCP_HELD_CALLS_PER_ORG = 64;

/**
 * A `tools/call` that waits for a person's decision, held open for up to
 * MCP_APPROVAL_WAIT_SECONDS with progress notifications when the client asked for them (the
 * setting is read per call, so that it can change without a restart of this object).
 *
 * Held for that long, the request is a stream like GET /events and a run's events, and ends like
 * them when its credential would be refused (CredentialWatch): an API key revoked meanwhile, a
 * token past its expiry. Its answer is then a JSON-RPC error, never the outcome: a tool's result
 * is handed over only after the credential is asked about again, since a revocation is otherwise
 * noticed only at the next heartbeat, and an approver may well decide before that.
 */
@Injectable()
export class McpHeldCalls implements OnModuleInit {
  /** Aborted when the HTTP server starts to close: waits end at once and answer "still pending". */
  private readonly closing = new AbortController();
  /** Calls held now, per organization (MCP_HELD_CALLS_PER_ORG). */
  private readonly holds: OrgHolds;

  constructor(
    private readonly waiter: DecisionWaiter,
    private readonly credentials: CredentialWatch,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    held: HeldRequests,
  ) {
    this.holds = new OrgHolds(() => this.config.mcpHeldCallsPerOrg ?? DEFAULT_MCP_HELD_CALLS_PER_ORG, held);
  }

  onModuleInit(): void {
    // preClose runs before Fastify waits for in-flight requests: a call held open for a decision
    // answers "still pending" (which the client can ask again about) instead of holding up the stop.
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.addHook('preClose', (done) => {
      this.closing.abort();
      done();
    });
  }

  /**
   * The call once decided (and, approved, run), or as it stands when the wait ends first; every
   * identical request held on the call gets the same (DecisionWaiter). 401 unauthorized
   * (a JSON-RPC error once MCP answers it) when the credential is no longer accepted.
   */
  async hold(principal: Principal, orgId: string, call: ToolCallView, extra: ServerContext, gone: AbortSignal): Promise<ToolCallView> {
    const waitSeconds = this.config.mcpApprovalWaitSeconds;
    // Each held call keeps a connection of the node's cap (HTTP_MAX_CONNECTIONS) for the wait: past
    // the organization's share the call is answered "still pending" at once, which the client asks
    // again about with the same arguments, as after a wait (attack round 10: one organization's
    // 2,000 held calls kept every other client, and the health checks, out of the node).
    if (waitSeconds === 0) return this.wait(principal, orgId, call, extra, gone, waitSeconds);
    const release = this.holds.tryHold(orgId);
    if (!release) return call;
    try {
      return await this.wait(principal, orgId, call, extra, gone, waitSeconds);
    } finally {
      release();
    }
  }

  private async wait(
    principal: Principal,
    orgId: string,
    call: ToolCallView,
    extra: ServerContext,
    gone: AbortSignal,
    waitSeconds: number,
  ): Promise<ToolCallView> {
    const token = extra.mcpReq._meta?.progressToken;
    let last: number | undefined;
    const progress = (waitedMs: number, message: string) => {
      // One at once (it names the approval), then about one a second; each larger than the last, as MCP requires.
      if (token === undefined || (last !== undefined && waitedMs < last + PROGRESS_EVERY_MS)) return;
      last = waitedMs;
      extra.mcpReq
        .notify({ method: 'notifications/progress', params: { progressToken: token, progress: waitedMs / 1000, total: waitSeconds, message } })
        .catch(() => undefined);
    };
    progress(0, waitingMessage(call, waitSeconds));
    if (waitSeconds === 0) return call;
    const credential = this.credentials.watch(principal);
    let asked = false;
    try {
      const decided = await this.waiter.waitForDecision(orgId, call.id, {
        timeoutMs: waitSeconds * 1000,
        signal: AbortSignal.any([extra.mcpReq.signal, gone, this.closing.signal, credential.signal]),
        onProgress: (now, waitedMs) => progress(waitedMs, waitingMessage(now, waitSeconds)),
        handover: () => {
          asked = true;
          return credential.accepted();
        },
      });
      // A node that is stopping answers "still pending" without asking: nothing of the outcome is in it.
      const refused = credential.signal.aborted || (!asked && !this.closing.signal.aborted && !(await credential.accepted()));
      if (refused) {
        throw ApiError.unauthorized(
          "This request's credential is no longer accepted (its API key was revoked, or its token expired) while the call waited for a person's decision, so the call's outcome is not sent here.",
        );
      }
      return decided;
    } finally {
      credential.release();
    }
  }
}

function waitingMessage(call: ToolCallView, waitSeconds: number): string {
  return call.status === 'running'
    ? 'A person approved the call; the tool is running.'
    : `Waiting up to ${waitSeconds} s for a person to decide on approval ${call.approvalId}.`;
}
