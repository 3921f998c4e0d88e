import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log as an event stream, and the webhook outbox.
 *
 * An event's position is (tx, seq): the id of the transaction that wrote it, then its sequence
 * number. `seq` alone cannot be a stream position: it is taken at insert and committed later, so
 * a reader that saw seq 11 may later see seq 10 appear. A reader that only hands out events of
 * transactions older than the oldest one still running (pg_snapshot_xmin), in (tx, seq) order,
 * never sees an earlier position appear afterwards: see src/events/README.md.
 */
export class EventsAndWebhooks1764500000000 implements MigrationInterface {
  name = 'EventsAndWebhooks1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_event ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id()`);
    await q.query(`CREATE INDEX audit_event_stream_idx ON audit_event (org_id, tx, seq)`);

    await q.query(`
      CREATE TABLE webhook_endpoint (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        url text NOT NULL,
        types text[] NOT NULL,
        description text,
        secret_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    await q.query(`CREATE INDEX webhook_endpoint_org_idx ON webhook_endpoint (org_id, created_at DESC, id DESC) WHERE deleted_at IS NULL`);

    // No foreign key to audit_event: checking one would lock the event row (FOR KEY SHARE) on
    // every delivery written, and the trigger below is the only writer.
    await q.query(`
      CREATE TABLE webhook_delivery (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL,
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoint(id),
        event_seq bigint NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL,
        last_status integer,
        last_error text,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        UNIQUE (endpoint_id, event_seq)
      )`);
    await q.query(`CREATE INDEX webhook_delivery_due_idx ON webhook_delivery (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_delivery_endpoint_idx ON webhook_delivery (endpoint_id, created_at DESC, id DESC)`);

    // One row per attempt, written when the attempt is claimed: its primary key is what makes
    // "attempt n of this delivery" happen at most once, whichever node claims it.
    await q.query(`
      CREATE TABLE webhook_attempt (
        delivery_id uuid NOT NULL REFERENCES webhook_delivery(id),
        attempt integer NOT NULL,
        org_id uuid NOT NULL,
        started_at timestamptz NOT NULL,
        finished_at timestamptz,
        response_status integer,
        error text,
        PRIMARY KEY (delivery_id, attempt)
      )`);

    // The outbox is written by the statement that writes the events, so an event and its
    // deliveries commit together whichever code path recorded the event.
    await q.query(`
      CREATE FUNCTION audit_event_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, next_attempt_at, created_at)
        SELECT gen_random_uuid(), n.org_id, w.id, n.seq, n.at, n.at
          FROM new_events n
          JOIN webhook_endpoint w ON w.org_id = n.org_id AND w.deleted_at IS NULL
                                 AND (n.type = ANY (w.types) OR '*' = ANY (w.types));
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_event_outbox AFTER INSERT ON audit_event
      REFERENCING NEW TABLE AS new_events
      FOR EACH STATEMENT EXECUTE FUNCTION audit_event_outbox()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER audit_event_outbox ON audit_event`);
    await q.query(`DROP FUNCTION audit_event_outbox()`);
    await q.query(`DROP TABLE webhook_attempt`);
    await q.query(`DROP TABLE webhook_delivery`);
    await q.query(`DROP TABLE webhook_endpoint`);
    await q.query(`DROP INDEX audit_event_stream_idx`);
    await q.query(`ALTER TABLE audit_event DROP COLUMN tx`);
  }
}
