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
  /** The stream's API key was revoked as of this read: nothing read may be sent, the stream ends. */
  keyRevoked: boolean;
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
 * An audit row with its stream position and the snapshot's horizon, and whether the stream's key
 * was live in that snapshot; a read with no events has one row, its event's columns null.
 */
interface Row extends Omit<AuditRow, 'seq'> {
  seq: string | null;
  tx: string;
  horizon: string;
  key_live: boolean;
}

/**
 * The audit table read as a stream. An event is handed out only once every transaction that
 * could still commit an event before it has finished: its transaction id is below the oldest
 * one still running (the snapshot's xmin). Then nothing can appear behind a reader's position,
 * so resuming from it loses nothing and repeats nothing. See README.md in this folder.
 */
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
   * Up to `limit` events after `after`, leaving out those visible to the snapshot `skipVisibleIn`;
   * none when `keyId` (the stream's API key) is revoked in the snapshot they are read with.
   */
  async readAfter(
    orgId: string,
    after: EventPosition,
    types: readonly string[] | undefined,
    limit: number,
    skipVisibleIn?: string,
    keyId?: string,
  ): Promise<StreamRead> {
    const params: unknown[] = [orgId, after.tx.toString(), after.seq.toString()];
    let typeFilter = '';
    if (types) {
      params.push(types);
      typeFilter = `AND type = ANY ($${params.length}::text[])`;
    }
    if (skipVisibleIn) {
      params.push(skipVisibleIn);
      typeFilter += ` AND NOT pg_visible_in_snapshot(tx, $${params.length}::pg_snapshot)`;
    }
    let live = 'true';
    if (keyId) {
      params.push(keyId);
      live = liveKeySql(`$${params.length}`);
    }
    params.push(limit);
    // One statement, so the horizon and the key belong to the snapshot the rows were read with: one
    // row without an event when there is none. Ordered by the columns, qualified: the bare names
    // are the text output columns, and '10' sorts before '9'.
    const rows: Row[] = await this.dataSource.query(
      `SELECT k.live AS key_live, e.seq::text AS seq, e.tx::text AS tx, e.horizon::text AS horizon,
              e.id, e.org_id, e.at, e.type, e.actor_type, e.actor_id, e.target_type, e.target_id, e.data
         FROM (SELECT ${live} AS live) k
         LEFT JOIN LATERAL (
           SELECT seq, tx, pg_snapshot_xmin(pg_current_snapshot()) AS horizon,
                  id, org_id, at, type, actor_type, actor_id, target_type, target_id, data
             FROM audit_event
            WHERE org_id = $1 AND (tx, seq) > ($2::xid8, $3::bigint) ${typeFilter}
            ORDER BY audit_event.tx, audit_event.seq
            LIMIT $${params.length}
         ) e ON k.live
        ORDER BY e.tx, e.seq`,
      params,
    );
    const events: StreamEvent[] = [];
    if (!rows[0]?.key_live) return { events, heldBack: false, keyRevoked: true };
    for (const r of rows) {
      if (r.seq === null) break;
      const tx = BigInt(r.tx);
      if (tx >= BigInt(r.horizon)) return { events, heldBack: true, keyRevoked: false };
      events.push({
        position: { tx, seq: BigInt(r.seq) },
        event: toAuditEvent(r),
      });
    }
    return { events, heldBack: false, keyRevoked: false };
  }
}
