import { MigrationInterface, QueryRunner } from 'typeorm';

/** Deliveries one statement's events write to one endpoint at most (the outbox below). */
export const MAX_DELIVERIES_PER_STATEMENT = 1000;

/**
 * The outbox writes an event's deliveries in the transaction that writes the event, and every
 * organization's event streams wait for the oldest transaction still running (the horizon,
 * src/events/README.md). Revoking a key fails its waiting runs in one transaction, an event a run:
 * with 8,301 runs and 50 endpoints on `*` it wrote 417,025 deliveries and took 8.3 s (0.66 s
 * without them), and another organization's event reached its own stream 8.1 s after its commit
 * (attack round 20, AA-F4). Now one statement writes an endpoint at most
 * MAX_DELIVERIES_PER_STATEMENT deliveries, the first of its events in order; an endpoint that had
 * more is marked as at its cap as the sweep marks it (webhook-backlog.repository.ts markIfFull:
 * its drop count starts below this transaction, so the sweep counts the events left out, and
 * clears the mark once half its cap or fewer are pending), audited `webhook.backlogged` in the same
 * transaction. Later statements of the transaction see the mark and write it nothing. An ordinary
 * request writes a few events, and its statement costs one look at its own transition table more.
 * The same revocation then wrote 51,825 deliveries in 1.9 s, the other event arriving after 1.7 s.
 */
const OUTBOX_PER_STATEMENT = `
  CREATE OR REPLACE FUNCTION audit_event_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    past uuid[];
  BEGIN
    -- A statement trigger fires for no rows too (the INSERT of the marks below would fire it again).
    IF NOT EXISTS (SELECT 1 FROM new_events) THEN
      RETURN NULL;
    END IF;
    -- Each endpoint takes its first events in order from the statement's own, one more than it may
    -- be written (the one that tells it was past the bound): ranking every matched pair instead
    -- sorted 4,096 events x 50 endpoints for a revocation's statement, most of them to be left out.
    WITH matched AS MATERIALIZED (
      SELECT w.org_id, n.seq, n.at, w.id AS endpoint_id,
             row_number() OVER (PARTITION BY w.id ORDER BY n.seq) AS nth
        FROM webhook_endpoint w
        CROSS JOIN LATERAL (
          SELECT e.seq, e.at FROM new_events e
           WHERE e.org_id = w.org_id AND (e.type = ANY (w.types) OR '*' = ANY (w.types))
           ORDER BY e.seq LIMIT ${MAX_DELIVERIES_PER_STATEMENT + 1}
        ) n
       WHERE w.org_id IN (SELECT DISTINCT e.org_id FROM new_events e) AND w.deleted_at IS NULL AND w.backlogged_at IS NULL
    ), written AS (
      INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, next_attempt_at, created_at)
      SELECT gen_random_uuid(), m.org_id, m.endpoint_id, m.seq, m.at, m.at FROM matched m WHERE m.nth <= ${MAX_DELIVERIES_PER_STATEMENT}
    )
    SELECT array_agg(m.endpoint_id) INTO past FROM matched m WHERE m.nth = ${MAX_DELIVERIES_PER_STATEMENT + 1};
    IF past IS NULL THEN
      RETURN NULL;
    END IF;
    WITH marked AS (
      UPDATE webhook_endpoint w SET
        backlogged_at = now(),
        dropped = CASE WHEN w.drop_cursor_tx IS NULL THEN 0 ELSE w.dropped END,
        dropped_first_at = CASE WHEN w.drop_cursor_tx IS NULL THEN NULL ELSE w.dropped_first_at END,
        dropped_last_at = CASE WHEN w.drop_cursor_tx IS NULL THEN NULL ELSE w.dropped_last_at END,
        drop_cursor_tx = COALESCE(w.drop_cursor_tx, pg_snapshot_xmin(pg_current_snapshot())),
        drop_cursor_seq = COALESCE(w.drop_cursor_seq, 0),
        drop_until_tx = NULL
       WHERE w.id = ANY (past) AND w.backlogged_at IS NULL
       RETURNING w.id, w.org_id, w.url
    )
    INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
    SELECT gen_random_uuid(), k.org_id, 'webhook.backlogged', 'system', 'webhook-backlog', 'webhook', k.id::text,
           jsonb_build_object('url', k.url, 'maxPerStatement', ${MAX_DELIVERIES_PER_STATEMENT})
      FROM marked k;
    RETURN NULL;
  END $$`;

/** As migration 1764522750000 left it. */
const OUTBOX_WITH_BACKLOG = `
  CREATE OR REPLACE FUNCTION audit_event_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, next_attempt_at, created_at)
    SELECT gen_random_uuid(), n.org_id, w.id, n.seq, n.at, n.at
      FROM new_events n
      JOIN webhook_endpoint w ON w.org_id = n.org_id AND w.deleted_at IS NULL AND w.backlogged_at IS NULL
                             AND (n.type = ANY (w.types) OR '*' = ANY (w.types));
    RETURN NULL;
  END $$`;

export class WebhookFanOutPerStatement1765000000000 implements MigrationInterface {
  name = 'WebhookFanOutPerStatement1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(OUTBOX_PER_STATEMENT);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(OUTBOX_WITH_BACKLOG);
  }
}
