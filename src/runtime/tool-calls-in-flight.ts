import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { HeldRequests, heldRefusalMessage } from '../common/held-requests';
import { OrgHolds } from '../common/org-holds';
import { APP_CONFIG, AppConfig } from '../config/app-config';

export const DEFAULT_TOOL_CALLS_IN_FLIGHT_PER_ORG = 128;

/**
 * Tool calls of one organization asked for over REST or MCP, or approved, that a node has in hand
 * at once: the request is held while the tool runs (up to TOOL_TIMEOUT_MS), keeping one of the
 * node's HTTP_MAX_CONNECTIONS. One organization's 2,400 calls of an MCP tool whose server never answered
 * kept every other client, health checks included, out for 28 s of 40 (attack round 10). Past
 * TOOL_CALLS_IN_FLIGHT_PER_ORG, another is `429 rate_limited` with `Retry-After`, nothing recorded.
 */
@Injectable()
export class ToolCallsInFlight {
  private readonly holds: OrgHolds;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly held: HeldRequests,
  ) {
    // Of the node's budget, not of the organization's share (HeldRequests.tryHold says why).
    this.holds = new OrgHolds(() => this.config.toolCallsInFlightPerOrg ?? DEFAULT_TOOL_CALLS_IN_FLIGHT_PER_ORG, {
      tryHold: (orgId) => held.tryHold(orgId, false),
    });
  }

  /** Runs `work` in one of the organization's places, or refuses it `429` when they are all taken. */
  async run<T>(orgId: string, work: () => Promise<T>): Promise<T> {
    const release = this.holds.tryHold(orgId);
    if (!release) {
      const max = this.config.toolCallsInFlightPerOrg ?? DEFAULT_TOOL_CALLS_IN_FLIGHT_PER_ORG;
      const refusal = this.held.refusal(orgId, false);
      throw new ApiError(
        'rate_limited',
        refusal
          ? `${heldRefusalMessage(refusal)} Nothing was recorded.`
          : `This organization has ${max} tool calls in progress on this server, the most it may (TOOL_CALLS_IN_FLIGHT_PER_ORG); retry when some have finished. Nothing was recorded.`,
        undefined,
        undefined,
        { 'Retry-After': '1' },
      );
    }
    try {
      return await work();
    } finally {
      release();
    }
  }
}
