import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { CredentialLease } from '../auth/credential-watch.service';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { EventLogRepository, StreamStart } from './event-log.repository';
import { EventPosition, formatPosition } from './event-position';
import { EventWakeups } from './event-wakeups.service';

/** Events read per query; also the most a stream holds in memory besides its socket's buffer. */
const BATCH = 100;
/** Streams one organization may hold open on one node. */
export const MAX_STREAMS_PER_ORG = 256;
/** A client that has not taken what was written for this long is cut; it resumes with Last-Event-ID. */
const SLOW_CLIENT_MS = 30_000;
/** How soon to read again when events wait for an older transaction to finish. */
const HELD_BACK_RETRY_MS = 100;
/** What EventSource waits before reconnecting. */
const RETRY_MS = 2_000;

/**
 * Slots for the streams of each organization on this node. A slot is taken before the first
 * await of the request that opens a stream: checking the count there and adding the stream only
 * once it opens let every request admitted meanwhile through (500 at once opened 386 of 256).
 */
export class OrgStreamSlots {
  private readonly taken = new Map<string, number>();

  constructor(
    readonly max: number,
    /** What the 429 says the organization has too many of. */
    private readonly what: string,
  ) {}

  /** A slot, or 429 `rate_limited`; the function returned gives it back (once, however often it is called). */
  take(orgId: string): () => void {
    const n = this.taken.get(orgId) ?? 0;
    if (n >= this.max) {
      throw new ApiError('rate_limited', `This organization has ${this.max} ${this.what} open on this server; close one first.`, undefined, undefined, {
        'Retry-After': '5',
      });
    }
    this.taken.set(orgId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.taken.get(orgId) ?? 1) - 1;
      if (left > 0) this.taken.set(orgId, left);
      else this.taken.delete(orgId);
    };
  }
}

/**
 * True once `res` took what was buffered; false when the client left, took nothing for
 * SLOW_CLIENT_MS (it resumes with Last-Event-ID), or `stop` was aborted.
 */
export function drained(res: ServerResponse, stop?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (res.destroyed || stop?.aborted) return resolve(false);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      stop?.removeEventListener('abort', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(onClose, SLOW_CLIENT_MS);
    res.on('drain', onDrain);
    res.on('close', onClose);
    stop?.addEventListener('abort', onClose);
  });
}

/**
 * One open `GET /events` stream. It pulls from the audit table at its own pace: a wake-up only
 * sets a flag, nothing is queued for it, and it reads the next batch only once the socket has
 * taken the last one. So a slow subscriber holds at most one batch, whatever the write rate.
 */
class Stream {
  private dirty = true;
  private wakeUp?: () => void;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  private cursor: EventPosition;
  private skip?: { visibleIn: string; below: bigint };
  /** Aborted at close: ends a wait for the socket to drain. */
  private readonly closing = new AbortController();

  constructor(
    readonly orgId: string,
    /** The credential the stream was opened with: the stream ends when it is no longer accepted. */
    private readonly credential: CredentialLease | undefined,
    private readonly types: readonly string[] | undefined,
    start: StreamStart,
    private readonly res: ServerResponse,
    private readonly log: EventLogRepository,
    private readonly logger: Logger,
    private readonly onClosed: (s: Stream) => void,
  ) {
    this.cursor = start.from;
    if (start.skipVisibleIn !== undefined && start.skipBelow !== undefined) this.skip = { visibleIn: start.skipVisibleIn, below: start.skipBelow };
  }

  start(): void {
    this.res.on('close', () => this.close());
    this.credential?.signal.addEventListener('abort', () => this.close(), { once: true });
    if (this.credential?.signal.aborted) return this.close();
    // A client that hung up while the request was still being answered emitted 'close' before
    // anyone listened: its stream would stay open, holding its slot, until the next event.
    if (this.res.destroyed) return this.close();
    // The start position as an id without data: a client that drops before any event arrives
    // still resumes from here, not from whenever it reconnects.
    this.res.write(`retry: ${RETRY_MS}\nid: ${formatPosition(this.cursor)}\n\n`);
    void this.run();
  }

  wake(): void {
    this.dirty = true;
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  heartbeat(): void {
    // A client that has not taken what is buffered needs no keep-alive, and must not be sent more.
    if (!this.closed && !this.res.writableNeedDrain) this.res.write(': keep-alive\n\n');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.credential?.release();
    clearTimeout(this.retryTimer);
    // A closed stream waits for no client, and its 30 s timer must not keep a stopping process up.
    this.closing.abort();
    this.wake();
    if (!this.res.writableEnded) this.res.end();
    this.onClosed(this);
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      if (!this.dirty) await new Promise<void>((resolve) => (this.wakeUp = resolve));
      if (this.closed) return;
      this.dirty = false;
      let read;
      try {
        read = await this.log.readAfter(this.orgId, this.cursor, this.types, BATCH, this.skip?.visibleIn, this.credential?.keyId);
      } catch (err) {
        this.logger.warn(`event stream read failed: ${(err as Error).message}`);
        this.later(1000);
        continue;
      }
      // Revoked through another node (or here, its commit not yet heard of): nothing read is sent.
      if (read.keyRevoked) return this.close();
      for (const { position, event } of read.events) {
        // The lease before each event: a revocation committed here meanwhile ends the stream before it.
        if (this.closed || this.credential?.signal.aborted) return this.close();
        const accepted = this.res.write(`id: ${formatPosition(position)}\ndata: ${JSON.stringify(event)}\n\n`);
        this.cursor = position;
        if (this.skip && position.tx >= this.skip.below) this.skip = undefined;
        if (!accepted && !(await drained(this.res, this.closing.signal))) return this.close();
      }
      if (read.events.length === BATCH) this.dirty = true;
      else if (read.heldBack) this.later(HELD_BACK_RETRY_MS);
    }
  }

  private later(ms: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.wake(), ms);
    this.retryTimer.unref();
  }
}

/** The open event streams of this node, woken by EventWakeups, kept alive by heartbeats. */
@Injectable()
export class EventStreamService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(EventStreamService.name);
  private readonly byOrg = new Map<string, Set<Stream>>();
  private readonly slots = new OrgStreamSlots(MAX_STREAMS_PER_ORG, 'event streams');
  private heartbeatTimer?: NodeJS.Timeout;
  private pollTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;

  constructor(
    private readonly log: EventLogRepository,
    private readonly wakeups: EventWakeups,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.wakeups.on((orgs) => {
      if (orgs === 'all') return this.wakeAll();
      for (const org of orgs) for (const s of this.byOrg.get(org) ?? []) s.wake();
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
    for (const set of this.byOrg.values()) n += set.size;
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
    const stream = new Stream(orgId, credential, types, from, res, this.log, this.logger, (s) => {
      const set = this.byOrg.get(s.orgId);
      set?.delete(s);
      if (set?.size === 0) this.byOrg.delete(s.orgId);
      release();
    });
    let set = this.byOrg.get(orgId);
    if (!set) this.byOrg.set(orgId, (set = new Set()));
    set.add(stream);
    stream.start();
  }

  /** Keep-alives (a stream whose credential is no longer accepted is ended by CredentialWatch). */
  private beat(): void {
    this.each((s) => s.heartbeat());
  }

  private wakeAll(): void {
    this.each((s) => s.wake());
  }

  private each(fn: (s: Stream) => void): void {
    for (const set of [...this.byOrg.values()]) for (const s of [...set]) fn(s);
  }
}
