import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { ToolCallsRepository, toToolCallView } from '../tool-calls/tool-calls.repository';
import { CallSettledNotifier } from './call-settled.notifier';
import { SETTLED_STATUSES } from './tool-executor.service';

export interface WaitOptions {
  /** How long to wait at most; the call as it stands then is returned. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** How often another node's decision is looked for. Default 1000 ms. */
  pollMs?: number;
  /** Called while still waiting, about every `pollMs` (for MCP progress notifications). */
  onProgress?: (call: ToolCallView, waitedMs: number) => void;
  /**
   * Asked before a settled outcome is handed over: false ends the wait with the call as it stands,
   * not handed over (the requester's next identical call still gets it). The caller's own state
   * says why (MCP: the requester's credential is no longer accepted).
   */
  handover?: () => Promise<boolean>;
}

/** Waiting for a person's decision on a call, for entry points that hold a request open (MCP, runs). */
@Injectable()
export class DecisionWaiter {
  constructor(
    private readonly store: ToolCallsRepository,
    private readonly settled: CallSettledNotifier,
  ) {}

  /**
   * Waits until the call is decided and settled (`succeeded`, `failed`, `rejected`, `expired`) or
   * `timeoutMs` passes, and returns the call as it stands. A settled answer counts as handed to the
   * requester (see `resumePending`), and is handed to every request held on the call: each was
   * waiting before the decision, so each is the same request (a client that asked again after
   * its own timeout). Handing it to the first alone sent the others back to ask anew, which found
   * nothing pending and asked a person for a second approval of the same call (attack round 6).
   * Only a request that arrives after the hand-over is a new call (ToolExecutor's resume).
   * Decisions made in this process wake it at once; those of other nodes are seen within `pollMs`.
   * 404 not_found for a call of another organization.
   */
  async waitForDecision(orgId: string, callId: string, options: WaitOptions): Promise<ToolCallView> {
    const started = Date.now();
    const pollMs = options.pollMs ?? 1000;
    for (;;) {
      const row = await this.store.findCall(orgId, callId);
      if (!row) throw ApiError.notFound('tool call');
      const view = toToolCallView(row);
      if (SETTLED_STATUSES.has(row.status)) {
        if (options.handover && !(await options.handover())) return view;
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
