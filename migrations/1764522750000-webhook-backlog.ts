import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A bound on each endpoint's pending deliveries (WEBHOOK_MAX_PENDING_PER_ENDPOINT). Deliveries
 * finish only as fast as the dispatcher attempts them, so an organization writing events faster
 * than its receivers answer (one that hangs: 10 s an attempt) grew pending rows without limit, and
 * retention removes only finished ones: disk for every tenant.
 *
 * The sweep (src/events/webhook-backlog.service.ts) sets `backlogged_at` when an endpoint reaches
 * the cap and clears it once half has drained; the outbox trigger writes no delivery for an
 * endpoint so marked. The trigger already reads the endpoint row, so the check costs the event's
 * write nothing, and nothing is written or locked per event skipped: a counter bumped there would
 * hold the endpoint's row lock until the caller's commit, queueing every concurrent writer of the
 * organization behind it.
 *
 * The events not written are counted afterwards, by the sweep, from the audit log itself: those of
 * the endpoint's types with no delivery for it, between stream positions (tx, seq), with the
 * stream's rule that only events below the oldest running transaction are final
 * (src/events/README.md). `drop_cursor_*` is how far that count has read; `drop_until_tx` ends it
 * once no transaction that could still see the mark can commit (set after the mark is cleared).
 * `dropped`, `dropped_first_at` and `dropped_last_at` describe the latest such episode.
 */
export class WebhookBacklog1764522750000 implements MigrationInterface {
  name = 'WebhookBacklog1764522750000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE webhook_endpoint
        ADD COLUMN backlogged_at timestamptz,
        ADD COLUMN dropped bigint NOT NULL DEFAULT 0,
        ADD COLUMN dropped_first_at timestamptz,
        ADD COLUMN dropped_last_at timestamptz,
        ADD COLUMN drop_cursor_tx xid8,
        ADD COLUMN drop_cursor_seq bigint,
        ADD COLUMN drop_until_tx xid8`);
    await q.query(`
      ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_drop_cursor_whole
        CHECK ((drop_cursor_tx IS NULL) = (drop_cursor_seq IS NULL))`);
    // The few endpoints the sweep has to look at besides those with pending deliveries.
    await q.query(`CREATE INDEX webhook_endpoint_backlog_idx ON webhook_endpoint (id) WHERE backlogged_at IS NOT NULL OR drop_cursor_tx IS NOT NULL`);
    await q.query(OUTBOX_WITH_BACKLOG);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(OUTBOX_WITHOUT_BACKLOG);
    await q.query(`DROP INDEX webhook_endpoint_backlog_idx`);
    await q.query(`ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_drop_cursor_whole`);
    await q.query(`
      ALTER TABLE webhook_endpoint
        DROP COLUMN backlogged_at, DROP COLUMN dropped, DROP COLUMN dropped_first_at, DROP COLUMN dropped_last_at,
        DROP COLUMN drop_cursor_tx, DROP COLUMN drop_cursor_seq, DROP COLUMN drop_until_tx`);
  }
}

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

const OUTBOX_WITHOUT_BACKLOG = `
  CREATE OR REPLACE FUNCTION audit_event_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, next_attempt_at, created_at)
    SELECT gen_random_uuid(), n.org_id, w.id, n.seq, n.at, n.at
      FROM new_events n
      JOIN webhook_endpoint w ON w.org_id = n.org_id AND w.deleted_at IS NULL
                             AND (n.type = ANY (w.types) OR '*' = ANY (w.types));
    RETURN NULL;
  END $$`;
