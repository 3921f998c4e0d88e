import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditRow, toAuditEvent } from '../audit/audit.repository';
import type { AuditEvent } from '../audit/audit.service';

/** A delivery claimed for one attempt: everything needed to make it without the database. */
export interface ClaimedDelivery {
  id: string;
  /** The organization of the endpoint. */
  orgId: string;
  endpointId: string;
  attempt: number;
  /** Where to POST: the URL as saved, to be opened when `sealed` (it holds a token). */
  url: { shown: string; sealed: string | null };
  secretSealed: string;
  /** The secret a rotation replaced, while it is kept: the attempt is signed with both. */
  previousSecretSealed: string | null;
  /**
   * The endpoint was deleted after the event that made this delivery was written, before that
   * write committed (its outbox read the endpoint live; the deletion's failing of pending
   * deliveries could not see this one): it is failed, never sent.
   */
  endpointDeleted: boolean;
  createdAt: Date;
  event: AuditEvent;
}

export type AttemptOutcome =
  | { kind: 'succeeded'; status: number }
  | { kind: 'retry'; status: number | null; error: string | null; at: Date }
  | { kind: 'failed'; status: number | null; error: string | null };

/** The greatest UUID: a row comparison against it passes over every endpoint of an organization. */
const LAST_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

/** The attempts each organization has in flight on this node, and how many one may have. */
export interface OrgSlots {
  taken: ReadonlyMap<string, number>;
  max: number;
}

/**
 * The outbox's side of the deliveries, for the dispatcher: claiming due ones for an attempt and
 * recording how the attempt ended, across organizations (each row keeps its own).
 */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Claims due deliveries for one attempt each, at most one per endpoint per call, none of the
   * endpoints in `busy`, and organizations in turn: each endpoint's next delivery is ranked within
   * its organization, oldest first, after the attempts the organization has in flight here
   * (`orgs.taken`), the lowest ranks are taken first, and none past `orgs.max`. Oldest first
   * across organizations made a fresh delivery wait behind every older one of organizations whose
   * receivers hang. One statement: the attempt number goes up, the attempt's row is
   * written (its key makes attempt n happen once), and the delivery is leased by moving its
   * next attempt past the attempt's timeout, so a node that dies mid-attempt leaves a delivery
   * that another node tries again (as the next attempt) once the lease has run out.
   */
  async claim(limit: number, busy: string[], leaseMs: number, orgs: OrgSlots): Promise<ClaimedDelivery[]> {
    const rows: (Omit<AuditRow, 'seq' | 'id'> & {
      id: string;
      owner_org_id: string;
      endpoint_id: string;
      attempts: number;
      url: string;
      url_sealed: string | null;
      secret_sealed: string;
      previous_secret_sealed: string | null;
      endpoint_deleted: boolean;
      created_at: Date;
      event_id: string;
    })[] = await this.dataSource.query(
      // heads: each endpoint's next delivery, one index probe per endpoint with pending deliveries
      // (an organization at its cap is stepped over whole), so the cost does not grow with a backlog.
      `WITH RECURSIVE taken AS (
         SELECT * FROM unnest($4::uuid[], $5::integer[]) AS t(org_id, n)
       ), heads AS (
         (SELECT org_id, endpoint_id, id, next_attempt_at FROM webhook_delivery
           WHERE status = 'pending' AND (SELECT min(next_attempt_at) FROM webhook_delivery WHERE status = 'pending') <= now()
           ORDER BY org_id, endpoint_id, next_attempt_at LIMIT 1)
         UNION ALL
         SELECT n.* FROM heads h CROSS JOIN LATERAL (
           SELECT d.org_id, d.endpoint_id, d.id, d.next_attempt_at FROM webhook_delivery d
            WHERE d.status = 'pending'
              AND (d.org_id, d.endpoint_id) > (h.org_id, CASE WHEN h.org_id = ANY ($7::uuid[]) THEN '${LAST_UUID}'::uuid ELSE h.endpoint_id END)
            ORDER BY d.org_id, d.endpoint_id, d.next_attempt_at LIMIT 1
         ) n
       ), due AS (
         SELECT id FROM (
           SELECT h.id, h.next_attempt_at,
                  row_number() OVER (PARTITION BY h.org_id ORDER BY h.next_attempt_at, h.id) + COALESCE(t.n, 0) AS nth_org
             FROM heads h LEFT JOIN taken t ON t.org_id = h.org_id
            WHERE h.next_attempt_at <= now() AND NOT (h.endpoint_id = ANY ($2::uuid[])) AND NOT (h.org_id = ANY ($7::uuid[]))
         ) ranked
         WHERE nth_org <= $6 ORDER BY nth_org, next_attempt_at, id LIMIT $1
       ), locked AS (
         SELECT d.id FROM webhook_delivery d JOIN due ON due.id = d.id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
          FOR UPDATE OF d SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_delivery d SET attempts = d.attempts + 1, next_attempt_at = now() + $3 * interval '1 millisecond'
           FROM locked WHERE d.id = locked.id
         RETURNING d.id, d.org_id, d.endpoint_id, d.event_seq, d.attempts, d.created_at
       ), logged AS (
         INSERT INTO webhook_attempt (delivery_id, attempt, org_id, started_at) SELECT id, attempts, org_id, now() FROM claimed
       )
       SELECT c.id, c.org_id AS owner_org_id, c.endpoint_id, c.attempts, c.created_at, w.url, w.url_sealed, w.secret_sealed,
              CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_sealed END AS previous_secret_sealed,
              w.deleted_at IS NOT NULL AS endpoint_deleted,
              e.id AS event_id, e.at, e.type, e.actor_type, e.actor_id, e.org_id, e.target_type, e.target_id, e.data
         FROM claimed c
         JOIN webhook_endpoint w ON w.id = c.endpoint_id AND w.org_id = c.org_id
         JOIN audit_event e ON e.seq = c.event_seq AND e.org_id = c.org_id`,
      [limit, busy, leaseMs, [...orgs.taken.keys()], [...orgs.taken.values()], orgs.max, [...orgs.taken].filter(([, n]) => n >= orgs.max).map(([id]) => id)],
    );
    return rows.map((r) => ({
      id: r.id,
      orgId: r.owner_org_id,
      endpointId: r.endpoint_id,
      attempt: r.attempts,
      url: { shown: r.url, sealed: r.url_sealed },
      secretSealed: r.secret_sealed,
      previousSecretSealed: r.previous_secret_sealed,
      endpointDeleted: r.endpoint_deleted,
      createdAt: new Date(r.created_at),
      // The event as the audit log shows it (an endpoint's URL in it with its query values and path tokens hidden).
      event: toAuditEvent({ ...r, id: r.event_id }),
    }));
  }

  /** Drops the previous signing secrets past their expiry (none is used then): a replaced secret is not kept longer than asked. */
  async forgetExpiredSecrets(): Promise<void> {
    await this.dataSource.query(
      `UPDATE webhook_endpoint SET previous_secret_sealed = NULL, previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= now()`,
    );
  }

  /**
   * Removes at most `batch` deliveries that finished (`succeeded`, `failed`) more than `retentionMs`
   * ago, their attempts with them, oldest first; answers how many. One short statement through
   * `webhook_delivery_finished_idx`, then the primary keys (`= ANY` of an array: a join let the
   * planner hash the whole table, 64 ms a batch at 100,000 rows against 15 ms), so a backlog of
   * millions is many brief statements, never one long lock.
   * Rows another node's sweep holds are skipped, so nodes sweeping at once take different rows.
   * A pending delivery is never taken, however old (its retries decide when it ends).
   */
  async deleteFinished(retentionMs: number, batch: number): Promise<number> {
    const [, count]: [unknown[], number] = await this.dataSource.query(
      `WITH doomed AS (
         SELECT id FROM webhook_delivery
          WHERE status <> 'pending' AND completed_at < now() - $1 * interval '1 millisecond'
          ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), attempts AS (
         DELETE FROM webhook_attempt WHERE delivery_id = ANY (ARRAY(SELECT id FROM doomed))
       )
       DELETE FROM webhook_delivery WHERE id = ANY (ARRAY(SELECT id FROM doomed))`,
      [retentionMs, batch],
    );
    return count;
  }

  /**
   * Removes at most `batch` endpoints deleted more than `retentionMs` ago whose deliveries have all
   * gone: their sealed secrets and URLs are kept no longer than their delivery log. Answers how many.
   */
  async deleteForgottenEndpoints(retentionMs: number, batch: number): Promise<number> {
    const [, count]: [unknown[], number] = await this.dataSource.query(
      `DELETE FROM webhook_endpoint WHERE id IN (
         SELECT w.id FROM webhook_endpoint w
          WHERE w.deleted_at < now() - $1 * interval '1 millisecond'
            AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.endpoint_id = w.id)
          ORDER BY w.deleted_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [retentionMs, batch],
    );
    return count;
  }

  /** When the next pending delivery comes due, if any. */
  async nextDue(): Promise<Date | undefined> {
    const rows: { at: Date | null }[] = await this.dataSource.query(`SELECT min(next_attempt_at) AS at FROM webhook_delivery WHERE status = 'pending'`);
    return rows[0]?.at ? new Date(rows[0].at) : undefined;
  }

  /**
   * Records how attempt `attempt` ended. Only while it is still the delivery's latest attempt:
   * an attempt that outlived its lease (another node has made the next one) changes nothing
   * but its own row.
   */
  async finish(deliveryId: string, attempt: number, outcome: AttemptOutcome): Promise<void> {
    const status = outcome.kind === 'succeeded' ? outcome.status : outcome.status;
    const error = outcome.kind === 'succeeded' ? null : outcome.error;
    await this.dataSource.query(
      `WITH logged AS (
         UPDATE webhook_attempt SET finished_at = now(), response_status = $3, error = $4
          WHERE delivery_id = $1 AND attempt = $2
       )
       UPDATE webhook_delivery SET
         status = $5, last_status = $3, last_error = $4,
         next_attempt_at = COALESCE($6::timestamptz, next_attempt_at),
         completed_at = CASE WHEN $5 = 'pending' THEN NULL ELSE now() END
        WHERE id = $1 AND attempts = $2 AND status = 'pending'`,
      [deliveryId, attempt, status, error, outcome.kind === 'retry' ? 'pending' : outcome.kind, outcome.kind === 'retry' ? outcome.at : null],
    );
  }
}
