import type { Logger } from '@nestjs/common';
import type { EventLogRepository, StreamEvent, StreamRead } from './event-log.repository';
import type { PositionSeal } from '../secrets/position-seals';
import { comparePositions, EventPosition, formatPosition } from './event-position';

/** Events read per query (and at most EVENT_READ_BYTES of them): the most a stream holds in memory besides its socket's buffer. */
export const BATCH = 100;
/** Catch-up reads one organization may have running on one node at once; its other streams behind wait their turn. */
export const CATCH_UP_READS_PER_ORG = 4;

/**
 * The frames of one read, each made once whatever the number of streams that carry it: an event's
 * frame is the same for every stream of the organization, and the frames a stream behind is sent
 * from a read are the same for every stream that was at its position with the same filter.
 */
export class Frames {
  private readonly frames = new Map<StreamEvent, string>();
  private readonly chunks = new Map<string, string>();

  constructor(private readonly seal: PositionSeal) {}

  of(e: StreamEvent): string {
    let f = this.frames.get(e);
    if (f === undefined) this.frames.set(e, (f = `id: ${formatPosition(this.seal, e.position)}\ndata: ${JSON.stringify(e.event)}\n\n`));
    return f;
  }

  /** The frames, joined, of the streams that share `filter`; `make` joins them for the first. */
  chunk(filter: string, make: () => string): string {
    let c = this.chunks.get(filter);
    if (c === undefined) this.chunks.set(filter, (c = make()));
    return c;
  }
}

/** A stream that reads the log behind the head, as CatchUpReads sees it. */
export interface Behind {
  readonly cursor: EventPosition;
  /** The types it carries (every type when undefined). */
  readonly types: readonly string[] | undefined;
  /** The opening snapshot it leaves out, while it is behind its end. */
  readonly skipVisibleIn: string | undefined;
  readonly keyId: string | undefined;
  /** Its share of a read from its cursor. */
  take(read: StreamRead, frames: Frames): void;
  /** The read failed: the stream asks again later. */
  failed(): void;
}

/**
 * The reads of an organization's streams that are behind (resumed from an old Last-Event-ID,
 * `0-0` included, or slowed by their client). Each stream reading on its own, 200 streams
 * replaying a log of 2,500 events read and serialized 500,000 events at once, and another
 * organization's requests waited 200 times longer (attack round 6). So the streams waiting at
 * the same position share one read, and its frames, and the organization has at most
 * CATCH_UP_READS_PER_ORG reads running; the others wait in order of arrival, and a stream that
 * read goes to the back. Each read starts on a turn of its own of the event loop, so other
 * organizations' requests run in between. A stream waits only for its turn, never for another's
 * client: one whose socket is full waits for it to drain before asking again.
 */
export class CatchUpReads {
  /** In order of arrival. */
  private readonly waiting = new Set<Behind>();
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly orgId: string,
    private readonly log: EventLogRepository,
    private readonly logger: Logger,
    private readonly seal: PositionSeal,
    private readonly max = CATCH_UP_READS_PER_ORG,
  ) {}

  enqueue(stream: Behind): void {
    this.waiting.add(stream);
    this.turn();
  }

  drop(stream: Behind): void {
    this.waiting.delete(stream);
  }

  private turn(): void {
    if (this.scheduled || this.running >= this.max || this.waiting.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
      this.turn();
    });
  }

  /** A read for the first stream waiting and every other one at its position. */
  private start(): void {
    const first = this.waiting.values().next().value;
    if (first === undefined || this.running >= this.max) return;
    const cohort = [...this.waiting].filter((s) => comparePositions(s.cursor, first.cursor) === 0);
    for (const s of cohort) this.waiting.delete(s);
    this.running++;
    void this.read(cohort).finally(() => {
      this.running--;
      this.turn();
    });
  }

  /**
   * From their common position, of the types any of them carries, leaving out an opening snapshot
   * in SQL when all of them leave out the same one; each keeps what its own types and snapshot let
   * it see, with the rules of the read (as the shared read at the head does).
   */
  private async read(cohort: Behind[]): Promise<void> {
    const types = cohort.some((s) => !s.types) ? undefined : [...new Set(cohort.flatMap((s) => s.types ?? []))];
    const skips = new Set(cohort.map((s) => s.skipVisibleIn));
    const skip = skips.size === 1 ? cohort[0].skipVisibleIn : undefined;
    const keys = [...new Set(cohort.flatMap((s) => (s.keyId ? [s.keyId] : [])))];
    let read: StreamRead;
    try {
      read = await this.log.readAfter(this.orgId, cohort[0].cursor, types, BATCH, skip, keys);
    } catch (err) {
      this.logger.warn(`event stream read failed: ${(err as Error).message}`);
      for (const s of cohort) s.failed();
      return;
    }
    const frames = new Frames(this.seal);
    for (const s of cohort) s.take(read, frames);
  }
}
