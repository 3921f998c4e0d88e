import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { CredentialLease } from '../auth/credential-watch.service';
import { ApiError } from '../common/api-error';
import { HeldRequests, heldRefusalMessage } from '../common/held-requests';
import { OrgHolds } from '../common/org-holds';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PositionSeals } from '../secrets/position-seals';
import { EventLogRepository, StreamStart } from './event-log.repository';
import { OrgStreams, Stream } from './event-stream';
import { EventWakeups } from './event-wakeups.service';

export { drained } from './event-stream';

/** Streams one organization may hold open on one node. */
export const MAX_STREAMS_PER_ORG = 256;
/**
 * Slots for the streams of each organization on this node. A slot is taken before the first
 * await of the request that opens a stream: checking the count there and adding the stream only
 * once it opens let every request admitted meanwhile through (500 at once opened 386 of 256).
 */
export class OrgStreamSlots {
  private readonly holds: OrgHolds;

  constructor(
    readonly max: number,
    /** What the 429 says the organization has too many of. */
    private readonly what: string,
    /** The node's budget of held requests, which a stream is one of. */
    private readonly held: HeldRequests,
  ) {
    this.holds = new OrgHolds(() => max, held);
  }

  /** A slot, or 429 `rate_limited`; the function returned gives it back (once, however often it is called). */
  take(orgId: string): () => void {
    const release = this.holds.tryHold(orgId);
    if (!release) {
      const refusal = this.held.refusal(orgId);
      const message = refusal ? heldRefusalMessage(refusal) : `This organization has ${this.max} ${this.what} open on this server; close one first.`;
      throw new ApiError('rate_limited', message, undefined, undefined, { 'Retry-After': '5' });
    }
    return release;
  }
}

/** The open event streams of this node, woken by EventWakeups, kept alive by heartbeats. */
@Injectable()
export class EventStreamService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(EventStreamService.name);
  private readonly byOrg = new Map<string, OrgStreams>();
  private readonly slots: OrgStreamSlots;
  private heartbeatTimer?: NodeJS.Timeout;
  private pollTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;

  constructor(
    private readonly log: EventLogRepository,
    private readonly wakeups: EventWakeups,
    private readonly seals: PositionSeals,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    held: HeldRequests,
  ) {
    this.slots = new OrgStreamSlots(MAX_STREAMS_PER_ORG, 'event streams', held);
  }

  onModuleInit(): void {
    this.unsubscribe = this.wakeups.on((orgs) => {
      if (orgs === 'all') return this.wakeAll();
      for (const org of orgs) this.byOrg.get(org)?.wake();
    });
    this.heartbeatTimer = setInterval(() => this.beat(), this.config.events.heartbeatMs);
    this.pollTimer = setInterval(() => this.wakeAll(), this.config.events.pollMs);
    this.heartbeatTimer.unref();
    this.pollTimer.unref();
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
    clearInterval(this.heartbeatTimer);
    clearInterval(this.pollTimer);
    this.closeAll();
  }

  /** Ends every stream (their clients reconnect, to this node or another, with Last-Event-ID). */
  closeAll(): void {
    this.each((s) => s.close());
  }

  get openStreams(): number {
    let n = 0;
    for (const group of this.byOrg.values()) n += group.streams.size;
    return n;
  }

  /** Where a stream without Last-Event-ID starts. */
  head(): Promise<StreamStart> {
    return this.log.head();
  }

  /**
   * Takes one of the organization's slots, or refuses the stream (429) before anything is read or
   * written. The caller gives it back if the stream does not open; `open` takes it over.
   */
  admit(orgId: string): () => void {
    return this.slots.take(orgId);
  }

  /** Opens the stream in the slot `release` gives back (one is taken when none is given). */
  open(
    orgId: string,
    credential: CredentialLease | undefined,
    types: readonly string[] | undefined,
    from: StreamStart,
    res: ServerResponse,
    release: () => void = this.admit(orgId),
  ): void {
    let group = this.byOrg.get(orgId);
    if (!group) {
      group = new OrgStreams(orgId, this.log, this.logger, this.seals.events(orgId), (g) => {
        if (this.byOrg.get(orgId) === g) this.byOrg.delete(orgId);
      });
      this.byOrg.set(orgId, group);
    }
    const stream = new Stream(orgId, credential, types, from, res, group, release);
    group.add(stream);
    stream.start();
  }

  /** Keep-alives (a stream whose credential is no longer accepted is ended by CredentialWatch). */
  private beat(): void {
    this.each((s) => s.heartbeat());
  }

  private wakeAll(): void {
    for (const group of [...this.byOrg.values()]) group.wake();
  }

  private each(fn: (s: Stream) => void): void {
    for (const group of [...this.byOrg.values()]) for (const s of [...group.streams]) fn(s);
  }
}
