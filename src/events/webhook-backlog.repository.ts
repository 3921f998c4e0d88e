import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { auditInsertWhen } from '../audit/audit.repository';
import type { AuditEventInput } from '../audit/audit.service';

/** An endpoint the sweep looks at: it has pending deliveries, or is marked. */
export interface BacklogCandidate {
  id: string;
  orgId: string;
  /** As answers show it (the audit events name it). */
  url: string;
  backlogged: boolean;
}

/** Where a drop count has read to: a stream position (src/events/event-position.ts), as text. */
export interface CountPosition {
  tx: string;
  seq: string;
  /** Where it ends (a transaction id), once the mark is cleared and seen cleared; null while open. */
  until: string | null;
}

/** An endpoint whose events not written as deliveries are being counted. */
export interface DropCount {
  id: string;
  orgId: string;
  types: string[];
  backlogged: boolean;
  at: CountPosition;
  /** The row version read (its `xmin`): closing the count applies only to that version. */
  version: string;
}

/** Pending deliveries of endpoint $1 of organization $2, counted through webhook_delivery_heads_idx up to `limit` rows. */
const pendingUpTo = (limit: string) =>
  `(SELECT count(*) FROM (SELECT 1 FROM webhook_delivery d WHERE d.org_id = $2 AND d.endpoint_id = $1 AND d.status = 'pending' LIMIT ${limit}) p)`;

/**
 * The sweep's side of WEBHOOK_MAX_PENDING_PER_ENDPOINT (migrations/1764522750000-webhook-backlog.ts):
 * marking an endpoint at its cap and clearing the mark, and counting the events its mark kept out
 * of the outbox. Every statement touches the endpoint row with a no-key lock at most, which the
 * outbox's foreign-key check (a key-share lock) never waits for: the event-writing path is not
 * slowed by any of this.
 */
@Injectable()
export class WebhookBacklogRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The live endpoints with pending deliveries (one index probe each, as the dispatcher's claim
   * finds them: the cost grows with the endpoints waiting, not their backlog), and those marked.
   */
  async candidates(): Promise<BacklogCandidate[]> {
    const rows: { id: string; org_id: string; url: string; backlogged: boolean }[] = await this.dataSource.query(
      `WITH RECURSIVE heads AS (
         (SELECT org_id, endpoint_id FROM webhook_delivery WHERE status = 'pending' ORDER BY org_id, endpoint_id LIMIT 1)
         UNION ALL
         SELECT n.* FROM heads h CROSS JOIN LATERAL (
           SELECT d.org_id, d.endpoint_id FROM webhook_delivery d
            WHERE d.status = 'pending' AND (d.org_id, d.endpoint_id) > (h.org_id, h.endpoint_id)
            ORDER BY d.org_id, d.endpoint_id LIMIT 1
         ) n
       )
       SELECT w.id, w.org_id, w.url, w.backlogged_at IS NOT NULL AS backlogged
         FROM heads h JOIN webhook_endpoint w ON w.id = h.endpoint_id AND w.org_id = h.org_id
        WHERE w.deleted_at IS NULL
       UNION
       SELECT w.id, w.org_id, w.url, true FROM webhook_endpoint w WHERE w.backlogged_at IS NOT NULL AND w.deleted_at IS NULL`,
    );
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, url: r.url, backlogged: r.backlogged }));
  }

  /**
   * Marks the endpoint when it has `maxPending` pending deliveries or more, with `event`, in one
   * statement: the count is the statement's own, and of two nodes marking at once the second's
   * UPDATE finds the row marked (it waits for the first's lock, then reads the row anew) and
   * writes no event. True when this call marked it.
   *
   * The drop count starts at the oldest transaction running as the mark is written: one older
   * than that has ended and cannot see the mark, and every later one is checked event by event
   * (countDrops). A count still running from an earlier mark goes on as the same episode.
   */
  async markIfFull(c: BacklogCandidate, maxPending: number, event: AuditEventInput): Promise<boolean> {
    const audit = auditInsertWhen([event], 4, 'EXISTS (SELECT 1 FROM w0)');
    const rows: unknown[] = await this.dataSource.query(
      `WITH w0 AS (
         UPDATE webhook_endpoint w SET
           backlogged_at = now(),
           dropped = CASE WHEN w.drop_cursor_tx IS NULL THEN 0 ELSE w.dropped END,
           dropped_first_at = CASE WHEN w.drop_cursor_tx IS NULL THEN NULL ELSE w.dropped_first_at END,
           dropped_last_at = CASE WHEN w.drop_cursor_tx IS NULL THEN NULL ELSE w.dropped_last_at END,
           drop_cursor_tx = COALESCE(w.drop_cursor_tx, pg_snapshot_xmin(pg_current_snapshot())),
           drop_cursor_seq = COALESCE(w.drop_cursor_seq, 0),
           drop_until_tx = NULL
          WHERE w.id = $1 AND w.org_id = $2 AND w.deleted_at IS NULL AND w.backlogged_at IS NULL
            AND ${pendingUpTo('$3::integer')} >= $3::integer
         RETURNING w.id
       )
       ${audit.sql} RETURNING id`,
      [c.id, c.orgId, maxPending, ...audit.params],
    );
    return rows.length > 0;
  }

  /** Clears the mark once the endpoint's pending deliveries are down to `resumeAt`, with `event`; as markIfFull, one statement. */
  async clearIfDrained(c: BacklogCandidate, resumeAt: number, event: AuditEventInput): Promise<boolean> {
    const audit = auditInsertWhen([event], 4, 'EXISTS (SELECT 1 FROM w0)');
    const rows: unknown[] = await this.dataSource.query(
      `WITH w0 AS (
         UPDATE webhook_endpoint w SET backlogged_at = NULL
          WHERE w.id = $1 AND w.org_id = $2 AND w.deleted_at IS NULL AND w.backlogged_at IS NOT NULL
            AND ${pendingUpTo('$3::integer + 1')} <= $3::integer
         RETURNING w.id
       )
       ${audit.sql} RETURNING id`,
      [c.id, c.orgId, resumeAt, ...audit.params],
    );
    return rows.length > 0;
  }

  /** The live endpoints whose drops are being counted. */
  async counting(): Promise<DropCount[]> {
    const rows: {
      id: string;
      org_id: string;
      types: string[];
      backlogged: boolean;
      tx: string;
      seq: string;
      until: string | null;
      version: string;
    }[] = await this.dataSource.query(
      `SELECT id, org_id, types, backlogged_at IS NOT NULL AS backlogged, drop_cursor_tx::text AS tx, drop_cursor_seq::text AS seq,
              drop_until_tx::text AS until, xmin::text AS version
         FROM webhook_endpoint WHERE drop_cursor_tx IS NOT NULL AND deleted_at IS NULL`,
    );
    return rows.map((r) => ({
      id: r.id,
      orgId: r.org_id,
      types: r.types,
      backlogged: r.backlogged,
      at: { tx: r.tx, seq: r.seq, until: r.until },
      version: r.version,
    }));
  }

  /**
   * Gives the count of an endpoint whose mark is cleared its end: the first transaction id not yet
   * assigned as of this statement. A transaction that left an event out saw the mark, so it had its
   * id (its events were inserted) before the clear committed, and this statement begins after a
   * read (`counting`) that saw the clear committed: every such id is below it. Only for the row
   * version that read saw; another version (another node's count moved on) waits for the next
   * sweep. Answers the end set, or undefined.
   */
  async closeCount(c: DropCount): Promise<string | undefined> {
    const [rows]: [{ until: string }[], number] = await this.dataSource.query(
      `UPDATE webhook_endpoint SET drop_until_tx = pg_snapshot_xmax(pg_current_snapshot())
        WHERE id = $1 AND xmin = $2::xid AND backlogged_at IS NULL AND drop_cursor_tx IS NOT NULL AND drop_until_tx IS NULL
        RETURNING drop_until_tx::text AS until`,
      [c.id, c.version],
    );
    return rows[0]?.until;
  }

  /**
   * Counts, from `at`, at most `batch` events of the endpoint's organization that are final
   * (below the oldest running transaction: nothing can commit before them any more,
   * src/events/README.md): those of its types without a delivery for it were left out by its mark.
   * Moves the position past them (to that horizon when fewer than `batch` remained) and, once past
   * the count's end, ends it. Only if the row still holds `at` (compare and set): of nodes counting
   * at once one moves it, the others' statements find it moved and count nothing, so no event is
   * counted twice. Undefined then. The position is a parameter, not read from the row in the
   * statement, so the planner walks audit_event_stream_idx in order for `batch` rows (read from a
   * joined row, it read and sorted every event past it: 180 ms a statement at 100,000 events past
   * the position, against 30 ms on PostgreSQL 15).
   */
  async countDrops(c: DropCount, at: CountPosition, batch: number): Promise<{ scanned: number; dropped: number; next: CountPosition | null } | undefined> {
    // An UPDATE answers [rows, count] through TypeORM.
    const [rows]: [{ scanned: number; dropped: number; tx: string | null; seq: string | null; until: string | null }[], number] = await this.dataSource.query(
      `WITH h AS (
           SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon
         ), scanned AS (
           SELECT b.tx, b.seq, b.at,
                  (b.type = ANY ($3::text[]) OR '*' = ANY ($3::text[]))
                    AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.endpoint_id = $1 AND d.event_seq = b.seq) AS dropped
             FROM (
               SELECT e.tx, e.seq, e.at, e.type FROM audit_event e
                WHERE e.org_id = $2 AND (e.tx, e.seq) > ($4::xid8, $5::bigint)
                  -- The count starts at the oldest transaction running when the mark was written, which may
                  -- be older than the endpoint: its organization's events before it were never its to miss.
                  AND e.at >= (SELECT created_at FROM webhook_endpoint WHERE id = $1)
                  AND e.tx < pg_snapshot_xmin(pg_current_snapshot()) AND ($6::xid8 IS NULL OR e.tx < $6::xid8)
                ORDER BY e.tx, e.seq LIMIT $7
             ) b
         ), last AS (
           SELECT tx, seq FROM scanned ORDER BY tx DESC, seq DESC LIMIT 1
         ), summary AS (
           SELECT count(*)::integer AS scanned, (count(*) FILTER (WHERE dropped))::integer AS dropped,
                  min(at) FILTER (WHERE dropped) AS first_at, max(at) FILTER (WHERE dropped) AS last_at
             FROM scanned
         ), next AS (
           SELECT s.*,
                  s.scanned < $7 AND $6::xid8 IS NOT NULL AND h.horizon >= $6::xid8 AS done,
                  CASE WHEN s.scanned = $7 THEN l.tx ELSE GREATEST($4::xid8, h.horizon) END AS tx,
                  CASE WHEN s.scanned = $7 THEN l.seq WHEN h.horizon > $4::xid8 THEN 0 ELSE $5::bigint END AS seq
             FROM h CROSS JOIN summary s LEFT JOIN last l ON true
         )
         UPDATE webhook_endpoint w SET
           dropped = w.dropped + n.dropped,
           dropped_first_at = LEAST(w.dropped_first_at, n.first_at),
           dropped_last_at = GREATEST(w.dropped_last_at, n.last_at),
           drop_cursor_tx = CASE WHEN n.done THEN NULL ELSE n.tx END,
           drop_cursor_seq = CASE WHEN n.done THEN NULL ELSE n.seq END,
           drop_until_tx = CASE WHEN n.done THEN NULL ELSE w.drop_until_tx END
           FROM next n
          WHERE w.id = $1 AND w.deleted_at IS NULL
            AND w.drop_cursor_tx = $4::xid8 AND w.drop_cursor_seq = $5::bigint AND w.drop_until_tx IS NOT DISTINCT FROM $6::xid8
         RETURNING n.scanned, n.dropped, w.drop_cursor_tx::text AS tx, w.drop_cursor_seq::text AS seq, w.drop_until_tx::text AS until`,
      [c.id, c.orgId, c.types, at.tx, at.seq, at.until, batch],
    );
    const r = rows[0];
    if (!r) return undefined;
    return { scanned: r.scanned, dropped: r.dropped, next: r.tx === null ? null : { tx: r.tx, seq: r.seq!, until: r.until } };
  }
}
