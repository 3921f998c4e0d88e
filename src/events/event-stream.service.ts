import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
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
  /** Ends a wait for the socket to drain (`drained()`), while one runs. */
  private stopWaiting?: () => void;

  constructor(
    readonly orgId: string,
    /** The API key the stream was opened with: a revoked key's streams end. */
    readonly keyId: string | undefined,
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
    clearTimeout(this.retryTimer);
    // A closed stream waits for no client, and its 30 s timer must not keep a stopping process up.
    this.stopWaiting?.();
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
        read = await this.log.readAfter(this.orgId, this.cursor, this.types, BATCH, this.skip?.visibleIn);
      } catch (err) {
        this.logger.warn(`event stream read failed: ${(err as Error).message}`);
        this.later(1000);
        continue;
      }
      for (const { position, event } of read.events) {
        if (this.closed) return;
        const accepted = this.res.write(`id: ${formatPosition(position)}\ndata: ${JSON.stringify(event)}\n\n`);
        this.cursor = position;
        if (this.skip && position.tx >= this.skip.below) this.skip = undefined;
        if (!accepted && !(await this.drained())) return this.close();
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

  /** True once the socket took what was buffered; false when the client left or was too slow. */
  private drained(): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.stopWaiting = undefined;
        this.res.off('drain', onDrain);
        this.res.off('close', onClose);
        resolve(ok && !this.closed);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), SLOW_CLIENT_MS);
      this.stopWaiting = onClose;
      this.res.on('drain', onDrain);
      this.res.on('close', onClose);
    });
  }
}

/** The open event streams of this node, woken by EventWakeups, kept alive by heartbeats. */
@Injectable()
export class EventStreamService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(EventStreamService.name);
  private readonly byOrg = new Map<string, Set<Stream>>();
  private heartbeatTimer?: NodeJS.Timeout;
  private pollTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  /** A heartbeat's key check is running. */
  private checkingKeys = false;

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
    this.heartbeatTimer = setInterval(() => void this.beat(), this.config.events.heartbeatMs);
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

  /** Refuses a stream over the organization's limit before anything is written. */
  admit(orgId: string): void {
    if ((this.byOrg.get(orgId)?.size ?? 0) >= MAX_STREAMS_PER_ORG) {
      throw new ApiError(
        'rate_limited',
        `This organization has ${MAX_STREAMS_PER_ORG} event streams open on this server; close one first.`,
        undefined,
        undefined,
        { 'Retry-After': '5' },
      );
    }
  }

  open(orgId: string, keyId: string | undefined, types: readonly string[] | undefined, from: StreamStart, res: ServerResponse): void {
    const stream = new Stream(orgId, keyId, types, from, res, this.log, this.logger, (s) => {
      const set = this.byOrg.get(s.orgId);
      set?.delete(s);
      if (set?.size === 0) this.byOrg.delete(s.orgId);
    });
    let set = this.byOrg.get(orgId);
    if (!set) this.byOrg.set(orgId, (set = new Set()));
    set.add(stream);
    stream.start();
  }

  /**
   * Heartbeats, and the end of every stream whose key was revoked since it opened: the guard
   * checked the key once, at the request, and a stream lasts for hours.
   */
  private async beat(): Promise<void> {
    // Keep-alives first: a slow database must not let proxies cut every idle stream.
    this.each((s) => s.heartbeat());
    // One check at a time: beats that come while the database is slow do not queue more.
    if (this.checkingKeys) return;
    const keys = new Set<string>();
    this.each((s) => s.keyId && keys.add(s.keyId));
    if (keys.size === 0) return;
    this.checkingKeys = true;
    try {
      const live = new Set(await this.log.liveKeys([...keys]));
      // Only the keys asked about: a stream opened while they were checked has a key the guard
      // has just accepted, and is checked at the next beat (cutting it made its client reconnect).
      this.each((s) => {
        if (s.keyId && keys.has(s.keyId) && !live.has(s.keyId)) s.close();
      });
    } catch (err) {
      this.logger.warn(`checking event stream keys failed: ${(err as Error).message}`);
    } finally {
      this.checkingKeys = false;
    }
  }

  private wakeAll(): void {
    this.each((s) => s.wake());
  }

  private each(fn: (s: Stream) => void): void {
    for (const set of [...this.byOrg.values()]) for (const s of [...set]) fn(s);
  }
}
