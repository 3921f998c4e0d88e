import { Inject, Injectable, Optional } from '@nestjs/common';
import { ApiError } from './api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_HTTP_LIMITS, heldRequestLimits } from '../config/http-config';
import { Metrics } from '../telemetry/metrics';
import { OrgHolds } from './org-holds';

/** Why a request could not be held: the organization's share, or the node's whole budget. */
export type HeldRequestRefusal = { limit: 'per_org' | 'node'; max: number; setting: string };

/**
 * Every request a node holds open on purpose, all kinds together: event streams, run event
 * streams, runs under `Prefer: wait`, MCP calls waiting for a decision, tool calls in progress, an
 * admin's MCP connection being listed (created, synced, moved) at a server that may not answer.
 * Each keeps one of the node's HTTP_MAX_CONNECTIONS for seconds to hours, and each kind had its own
 * bound per organization only: one organization could hold about 770 of 2,000 connections, three
 * the whole node, health checks included. Held together they stay under HTTP_HELD_REQUESTS_MAX
 * (the rest of the connections are for every other request), one organization's under
 * HTTP_HELD_REQUESTS_PER_ORG, tool calls in progress aside (see tryHold). A kind's own bound
 * (OrgHolds) is asked first, then this.
 */
@Injectable()
export class HeldRequests {
  private held = 0;
  private readonly max: number;
  private readonly perOrg: OrgHolds;
  private readonly perOrgMax: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    const limits = heldRequestLimits(config.httpLimits ?? DEFAULT_HTTP_LIMITS);
    this.max = limits.max;
    this.perOrgMax = limits.perOrg;
    this.perOrg = new OrgHolds(() => this.perOrgMax);
    metrics?.gauge(
      'held_requests',
      'Requests this node holds open on purpose now (streams, waits, tool calls in progress), all organizations together.',
      () => this.held,
    );
  }

  /**
   * A release (once counts) when the node and, `ofShare`, the organization have room, else
   * undefined. Tool calls in progress are not of the share (`ofShare` false): each is work that
   * ends within TOOL_TIMEOUT_MS and TOOL_CALLS_IN_FLIGHT_PER_ORG bounds them, and counted in it an
   * organization's open consoles (an event stream each) left its agents no call to make.
   */
  tryHold(orgId: string, ofShare = true): (() => void) | undefined {
    if (this.held >= this.max) {
      this.metrics?.heldRequestRefused('node');
      return undefined;
    }
    const release = ofShare ? this.perOrg.tryHold(orgId) : () => undefined;
    if (!release) {
      this.metrics?.heldRequestRefused('per_org');
      return undefined;
    }
    this.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      release();
    };
  }

  /**
   * Runs `work` (a request that waits on another server: an MCP connection listed at its address)
   * in one of the organization's places, or refuses it `429` with `Retry-After` when none is left.
   */
  async run<T>(orgId: string, work: () => Promise<T>): Promise<T> {
    const release = this.tryHold(orgId);
    if (!release)
      throw new ApiError('rate_limited', `${heldRefusalMessage(this.refusal(orgId)!)} Nothing was changed.`, undefined, undefined, { 'Retry-After': '1' });
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * What refuses the organization a place now, if this does (the node's budget or its share);
   * undefined when there is room here, so a refusal came from the kind's own bound.
   */
  refusal(orgId: string, ofShare = true): HeldRequestRefusal | undefined {
    if (this.held >= this.max) return { limit: 'node', max: this.max, setting: 'HTTP_HELD_REQUESTS_MAX' };
    if (ofShare && this.perOrg.count(orgId) >= this.perOrgMax) return { limit: 'per_org', max: this.perOrgMax, setting: 'HTTP_HELD_REQUESTS_PER_ORG' };
    return undefined;
  }
}

/** The sentence a refusal's problem document carries. */
export function heldRefusalMessage(refusal: HeldRequestRefusal): string {
  return refusal.limit === 'node'
    ? `This server holds ${refusal.max} requests open (streams, waits, tool calls in progress), the most it may (${refusal.setting}); retry, here or on another server.`
    : `This organization holds ${refusal.max} requests open on this server (streams, waits, tool calls in progress), the most it may (${refusal.setting}); retry when some have finished.`;
}
