import type { Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { CredentialLease } from '../auth/credential-watch.service';
import { EventLogRepository, StreamEvent, StreamRead, StreamStart, visibleInSnapshot } from './event-log.repository';
import type { PositionSeal } from '../secrets/position-seals';
import { Behind, BATCH, CatchUpReads, Frames } from './catch-up-reads';
import { comparePositions, EventPosition, formatPosition } from './event-position';

/** A client that has not taken what was written for this long is cut; it resumes with Last-Event-ID. */
const SLOW_CLIENT_MS = 30_000;
/** How soon to read again when events wait for an older transaction to finish. */
const HELD_BACK_RETRY_MS = 100;
/** What EventSource waits before reconnecting. */
const RETRY_MS = 2_000;

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
 * The open streams of one organization on this node, and the read they share. Every commit of
 * the organization wakes all of them: with a read each, 256 streams made each commit 256 queries
 * on the shared pool and 256 serializations of the same events, and another organization's
 * requests waited 15 times longer. So the streams that are at the head take their events from one
 * read, from the lowest of their positions, each keeping what its types, its role and its opening
 * snapshot let it see. The streams that are behind (resumed from an old position, or slowed down
 * by their client) take their turns in `behind`, sharing the reads of a same position, until they
 * have caught up.
 */
export class OrgStreams {
  readonly streams = new Set<Stream>();
  /** A shared read is wanted: set by a wake-up, cleared when a read starts. */
  private pending = false;
  private scheduled = false;
  private reading = false;
  private retryTimer?: NodeJS.Timeout;
  /** The reads of the streams that are behind. */
  readonly behind: CatchUpReads;

  constructor(
    readonly orgId: string,
    readonly log: EventLogRepository,
    readonly logger: Logger,
    /** The organization's seal of positions: derived once for all its streams. */
    readonly seal: PositionSeal,
    private readonly onEmpty: (group: OrgStreams) => void,
  ) {
    this.behind = new CatchUpReads(orgId, log, logger, seal);
  }

  add(stream: Stream): void {
    this.streams.add(stream);
  }

  remove(stream: Stream): void {
    this.streams.delete(stream);
    this.behind.drop(stream);
    if (this.streams.size > 0) return;
    clearTimeout(this.retryTimer);
    this.onEmpty(this);
  }

  /** Something new for the organization: one read serves the streams at the head; those behind read on anyway. */
  wake(): void {
    for (const s of this.streams) if (!s.joined) s.wake();
    this.schedule();
  }

  /**
   * One shared read, on the next turn of the event loop: the commits of a burst wake it many times
   * and are read once; those committed while it runs are read by one more.
   */
  schedule(): void {
    this.pending = true;
    if (this.scheduled || this.reading) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.read();
    });
  }

  private async read(): Promise<void> {
    this.reading = true;
    try {
      while (this.pending) {
        this.pending = false;
        const members = [...this.streams].filter((s) => s.joined);
        if (members.length === 0) return;
        let from = members[0].cursor;
        for (const s of members) if (comparePositions(s.cursor, from) < 0) from = s.cursor;
        const keys = [...new Set(members.flatMap((s) => (s.keyId ? [s.keyId] : [])))];
        let read: StreamRead;
        try {
          read = await this.log.readAfter(this.orgId, from, undefined, BATCH, undefined, keys);
        } catch (err) {
          this.logger.warn(`event stream read failed: ${(err as Error).message}`);
          return this.later(1000);
        }
        const frames = new Frames(this.seal);
        for (const s of members) s.deliver(read, frames);
        if (read.cut) this.pending = true;
        else if (read.heldBack) this.later(HELD_BACK_RETRY_MS);
      }
    } finally {
      this.reading = false;
    }
  }

  private later(ms: number): void {
    clearTimeout(this.retryTimer);
    if (this.streams.size === 0) return;
    this.retryTimer = setTimeout(() => this.schedule(), ms);
    this.retryTimer.unref();
  }
}

/**
 * One open `GET /events` stream. It never holds more than one batch besides its socket's buffer:
 * behind, it asks for its next turn only once the socket has taken the last batch; served by its
 * organization's read, a socket that fills up takes it out of the shared reads until it has
 * drained and caught up. So a slow subscriber costs one batch, whatever the write rate.
 */
export class Stream implements Behind {
  /**
   * How far the stream has looked: its last event sent, or past it when what followed was not
   * for it (a resume from the last event sent skips the same events, so nothing changes for the client).
   */
  cursor: EventPosition;
  /** At the head: served by the organization's shared read instead of taking turns behind. */
  joined = false;
  /** Woken since it last asked for a turn behind: once at the head, it asks the shared read to look. */
  private dirty = true;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  private skip?: { visibleIn: string; below: bigint };
  private readonly typeSet?: ReadonlySet<string>;
  /** Its types and opening snapshot: streams behind at one position with the same filter are sent the same frames. */
  private readonly filter: string;
  /** Aborted at close: ends a wait for the socket to drain. */
  private readonly closing = new AbortController();

  constructor(
    readonly orgId: string,
    /** The credential the stream was opened with: the stream ends when it is no longer accepted. */
    private readonly credential: CredentialLease | undefined,
    readonly types: readonly string[] | undefined,
    start: StreamStart,
    private readonly res: ServerResponse,
    private readonly group: OrgStreams,
    private readonly onClosed: (s: Stream) => void,
  ) {
    this.cursor = start.from;
    if (types) this.typeSet = new Set(types);
    if (start.skipVisibleIn !== undefined && start.skipBelow !== undefined) this.skip = { visibleIn: start.skipVisibleIn, below: start.skipBelow };
    this.filter = `${types ? [...new Set(types)].sort().join(',') : '*'} ${this.skip?.visibleIn ?? ''}`;
  }

  get keyId(): string | undefined {
    return this.credential?.keyId;
  }

  get skipVisibleIn(): string | undefined {
    return this.skip?.visibleIn;
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
    this.res.write(`retry: ${RETRY_MS}\nid: ${formatPosition(this.group.seal, this.cursor)}\n\n`);
    this.behind();
  }

  wake(): void {
    this.dirty = true;
  }

  heartbeat(): void {
    // A client that has not taken what is buffered needs no keep-alive, and must not be sent more.
    if (!this.closed && !this.res.writableNeedDrain) this.res.write(': keep-alive\n\n');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.joined = false;
    this.credential?.release();
    clearTimeout(this.retryTimer);
    // A closed stream waits for no client, and its 30 s timer must not keep a stopping process up.
    this.closing.abort();
    // A client that has not taken what was written (cut as slow) would keep the connection, and
    // what the node buffered for it, for as long as it reads nothing (TCP keeps a zero window
    // open), while its slot went to its next stream: one key's streams held 459 connections past
    // the cap of 256 (attack round 14, P-F2). Such a socket is closed, as run streams' are.
    if (this.res.writableNeedDrain) this.res.destroy();
    else if (!this.res.writableEnded) this.res.end();
    this.group.remove(this);
    this.onClosed(this);
  }

  /** This stream's share of its organization's read. */
  deliver(read: StreamRead, frames: Frames): void {
    if (this.closed || !this.joined) return;
    // Revoked through another node (or here, its commit not yet heard of): nothing read is sent.
    if (this.keyId && read.revokedKeys.has(this.keyId)) return this.close();
    for (const e of read.events) {
      if (comparePositions(e.position, this.cursor) <= 0) continue;
      // The lease before each event: a revocation committed here meanwhile ends the stream before it.
      if (this.credential?.signal.aborted) return this.close();
      const wanted = this.wants(e);
      const accepted = !wanted || this.res.write(frames.of(e));
      this.passed(e.position);
      if (!accepted) {
        // The rest of this read is not held for it: it reads behind once its client has caught up.
        this.joined = false;
        this.dirty = true;
        void this.afterDrain();
        return;
      }
    }
    this.reached(read);
  }

  /**
   * Its share of a read made from its position (CatchUpReads), in one write: what its types and
   * opening snapshot let it see. Then its next turn once the socket has taken it, or, when the
   * read was not cut (at BATCH events or EVENT_READ_BYTES), the shared read at the head.
   */
  take(read: StreamRead, frames: Frames): void {
    if (this.closed) return;
    // Revoked through another node (or here, its commit not yet heard of): nothing read is sent.
    if (this.keyId && read.revokedKeys.has(this.keyId)) return this.close();
    if (this.credential?.signal.aborted) return this.close();
    const chunk = frames.chunk(this.filter, () => read.events.map((e) => (this.wants(e) ? frames.of(e) : '')).join(''));
    const accepted = chunk === '' || this.res.write(chunk);
    for (const e of read.events) this.passed(e.position);
    const full = read.cut;
    if (!full) this.reached(read);
    void this.afterTake(accepted, full, read.heldBack);
  }

  failed(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.behind(), 1000);
    this.retryTimer.unref();
  }

  private async afterTake(accepted: boolean, full: boolean, heldBack: boolean): Promise<void> {
    if (!accepted && !(await drained(this.res, this.closing.signal))) return this.close();
    if (this.closed) return;
    if (full) return this.behind();
    // At the head: the organization's read serves it from here, and reads again for what was
    // woken while this read ran, or held back by an older transaction.
    this.joined = true;
    if (this.dirty || heldBack) this.group.schedule();
  }

  /** Asks for a turn among the organization's streams behind; the read it gets sees every commit before it. */
  private behind(): void {
    if (this.closed) return;
    this.dirty = false;
    this.group.behind.enqueue(this);
  }

  private async afterDrain(): Promise<void> {
    if (!(await drained(this.res, this.closing.signal))) return this.close();
    this.behind();
  }

  private wants(e: StreamEvent): boolean {
    if (this.typeSet && !this.typeSet.has(e.event.type)) return false;
    return !(this.skip && visibleInSnapshot(e.position.tx, this.skip.visibleIn));
  }

  private passed(position: EventPosition): void {
    if (comparePositions(position, this.cursor) <= 0) return;
    this.cursor = position;
    if (this.skip && position.tx >= this.skip.below) this.skip = undefined;
  }

  /** A read not cut (at BATCH or its bytes) and holding nothing back saw every event before its horizon. */
  private reached(read: StreamRead): void {
    if (!read.cut && !read.heldBack) this.passed({ tx: read.horizon, seq: 0n });
  }
}
