import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditRow, toAuditEvent } from '../audit/audit.repository';
import { liveKeySql } from '../auth/api-keys.repository';
import type { AuditEvent } from '../audit/audit.service';
import { EventPosition } from './event-position';

export interface StreamEvent {
  position: EventPosition;
  event: AuditEvent;
}

export interface StreamRead {
  events: StreamEvent[];
  /**
   * True when committed events exist past the last one returned that may not be handed out yet:
   * a transaction older than theirs is still running and may still commit events before them.
   * The reader reads again shortly; nobody else will wake it for them.
   */
  heldBack: boolean;
  /**
   * True when the read stopped at its `limit` or its byte budget: more events may follow the last
   * one returned now, so the reader reads again at once (and has not seen up to the horizon).
   */
  cut: boolean;
  /**
   * The oldest transaction still running as of this read: when the read was not cut at `limit` and
   * nothing was held back, every event before `<horizon>-0` has been seen.
   */
  horizon: bigint;
  /** The readers' API keys revoked as of this read: nothing read may be sent on their streams, which end. */
  revokedKeys: ReadonlySet<string>;
}

/**
 * Where a stream without Last-Event-ID begins: at the horizon, skipping what had already
 * committed when it opened. The horizon alone is not "now": a transaction still running anywhere
 * on the server holds it back, and every event committed after that transaction began would be
 * sent again as new.
 */
export interface StreamStart {
  from: EventPosition;
  /** The snapshot taken at the opening (`pg_snapshot` text), when it had transactions running. */
  skipVisibleIn?: string;
  /** Past this transaction id nothing was visible to that snapshot, so the skip can end. */
  skipBelow?: bigint;
}

/**
 * An audit row with its stream position and the snapshot's horizon, and the readers' keys revoked
 * in that snapshot; a read with no events has one row, its event's columns null.
 */
interface Row extends Omit<AuditRow, 'seq'> {
  seq: string | null;
  tx: string;
  found: string | null;
  horizon: string;
  revoked: string[];
}

/**
 * The audit table read as a stream. An event is handed out only once every transaction that
 * could still commit an event before it has finished: its transaction id is below the oldest
 * one still running (the snapshot's xmin). Then nothing can appear behind a reader's position,
 * so resuming from it loses nothing and repeats nothing. See README.md in this folder.
 */
/**
 * Bytes of events (their stored `data_bytes`) one read returns at most, besides the one that
 * passes it (a read has at least one): a stream behind is sent a read in one write, and 100
 * events of 237 KB each (a refused call's 50 errors, which any agent key has written) made that
 * write 24 MB, held by the node for each stream whose client read nothing (attack round 14, P-F1).
 */
export const EVENT_READ_BYTES = 256 * 1024;

@Injectable()
export class EventLogRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Where a new reader starts: no transaction still running can write before it. */
  async head(): Promise<StreamStart> {
    // The bounds from PostgreSQL, not parsed out of the snapshot's text: its third field lists the
    // transactions running (`xmin:xmax:id,id,...`), and reading it as a number failed whenever two
    // or more were.
    const rows: { snapshot: string; xmin: string; xmax: string }[] = await this.dataSource.query(
      `SELECT s::text AS snapshot, pg_snapshot_xmin(s)::text AS xmin, pg_snapshot_xmax(s)::text AS xmax FROM pg_current_snapshot() AS s`,
    );
    const { snapshot } = rows[0];
    const xmin = BigInt(rows[0].xmin);
    const xmax = BigInt(rows[0].xmax);
    // With nothing running xmin = xmax, and every earlier transaction has ended.
    if (xmin === xmax) return { from: { tx: xmin, seq: 0n } };
    return { from: { tx: xmin, seq: 0n }, skipVisibleIn: snapshot, skipBelow: xmax };
  }

  /**
   * Up to `limit` events after `after`, and no more than `maxBytes` of them besides the one that
   * passes it (ended in the database, from each event's stored size: what is left out is never
   * read), leaving out those visible to the snapshot `skipVisibleIn`,
   * and which of `keyIds` (the readers' API keys) are revoked in the snapshot they are read with:
   * a reader whose key is sends none of them. One read serves every stream of an organization
   * that is at the head (EventStreamService), each with its own key.
   */
  async readAfter(
    orgId: string,
    after: EventPosition,
    types: readonly string[] | undefined,
    limit: number,
    skipVisibleIn?: string,
    keyIds: readonly string[] = [],
    maxBytes = EVENT_READ_BYTES,
  ): Promise<StreamRead> {
    const params: unknown[] = [orgId, after.tx.toString(), after.seq.toString(), keyIds];
    let typeFilter = '';
    if (types) {
      params.push(types);
      typeFilter = `AND type = ANY ($${params.length}::text[])`;
    }
    if (skipVisibleIn) {
      params.push(skipVisibleIn);
      typeFilter += ` AND NOT pg_visible_in_snapshot(tx, $${params.length}::pg_snapshot)`;
    }
    params.push(limit, maxBytes);
    // One statement, so the horizon and the keys belong to the snapshot the rows were read with: one
    // row without an event when there is none. Ordered by the columns, qualified: the bare names
    // are the text output columns, and '10' sorts before '9'.
    const rows: Row[] = await this.dataSource.query(
      `SELECT k.revoked, h.horizon, e.seq::text AS seq, e.tx::text AS tx, e.found::text AS found,
              e.id, e.org_id, e.at, e.type, e.actor_type, e.actor_id, e.target_type, e.target_id, e.data
         FROM (SELECT coalesce(array_agg(u.id::text), '{}') AS revoked FROM unnest($4::uuid[]) AS u(id)
                WHERE NOT ${liveKeySql('u.id')}) k
        CROSS JOIN (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon) h
         LEFT JOIN LATERAL (
           SELECT * FROM (
             SELECT c.*, count(*) OVER () AS found,
                    coalesce(sum(c.data_bytes) OVER (ORDER BY c.tx, c.seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS bytes_before
               FROM (SELECT seq, tx, id, org_id, at, type, actor_type, actor_id, target_type, target_id, data, data_bytes
                       FROM audit_event
                      WHERE org_id = $1 AND (tx, seq) > ($2::xid8, $3::bigint) ${typeFilter}
                      ORDER BY audit_event.tx, audit_event.seq
                      LIMIT $${params.length - 1}) c
           ) w WHERE w.bytes_before < $${params.length}
         ) e ON true
        ORDER BY e.tx, e.seq`,
      params,
    );
    const horizon = BigInt(rows[0].horizon);
    const revokedKeys: ReadonlySet<string> = new Set(rows[0].revoked);
    // Stopped at the limit, or the budget left some of the rows it found out.
    const found = rows[0].found === null ? 0 : Number(rows[0].found);
    const cut = found >= limit || rows.length < found;
    const events: StreamEvent[] = [];
    for (const r of rows) {
      if (r.seq === null) break;
      const tx = BigInt(r.tx);
      if (tx >= horizon) return { events, heldBack: true, cut: false, horizon, revokedKeys };
      events.push({
        position: { tx, seq: BigInt(r.seq) },
        event: toAuditEvent(r),
      });
    }
    return { events, heldBack: false, cut, horizon, revokedKeys };
  }
}

/**
 * Whether transaction `tx` had committed for the snapshot `snapshot` (`pg_snapshot` text,
 * `xmin:xmax:xip,...`): PostgreSQL's `pg_visible_in_snapshot`, for a read shared by streams that
 * each opened with a snapshot of their own.
 */
export function visibleInSnapshot(tx: bigint, snapshot: string): boolean {
  const [xmin, xmax, running = ''] = snapshot.split(':');
  if (tx < BigInt(xmin)) return true;
  if (tx >= BigInt(xmax)) return false;
  return !running.split(',').some((x) => x !== '' && BigInt(x) === tx);
}
