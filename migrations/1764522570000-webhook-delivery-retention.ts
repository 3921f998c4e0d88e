import { MigrationInterface, QueryRunner } from 'typeorm';

const INDEXES = {
  // The finished deliveries by when they finished: the retention sweep takes those past
  // WEBHOOK_DELIVERY_RETENTION_DAYS oldest first, a bounded batch per statement, reading only the
  // index entries of the rows it deletes.
  webhook_delivery_finished_idx: `webhook_delivery (completed_at) WHERE status <> 'pending'`,
  // Deleted endpoints by deletion time: a deleted endpoint's row (its sealed secret and URL) goes
  // once it is past the retention and its last delivery has gone.
  webhook_endpoint_deleted_idx: `webhook_endpoint (deleted_at) WHERE deleted_at IS NOT NULL`,
};

/**
 * What the webhook delivery retention sweep reads (src/events/webhook-retention.service.ts).
 * Built CONCURRENTLY, outside a transaction: webhook_delivery can be very large by the time this
 * runs, and a plain CREATE INDEX would hold every insert into it (the outbox trigger: every
 * audited write of every organization) until the build ended.
 */
export class WebhookDeliveryRetention1764522570000 implements MigrationInterface {
  name = 'WebhookDeliveryRetention1764522570000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    for (const [name, definition] of Object.entries(INDEXES)) {
      // A build cut short (the node stopped mid-way) leaves an invalid index that IF NOT EXISTS would keep.
      const invalid = (await q.query(`SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1 AND NOT i.indisvalid`, [
        name,
      ])) as unknown[];
      if (invalid.length > 0) await q.query(`DROP INDEX CONCURRENTLY ${name}`);
      await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${definition}`);
    }
  }

  // Not CONCURRENTLY: TypeORM reverts in a transaction whatever `transaction` says (a drop is quick).
  async down(q: QueryRunner): Promise<void> {
    for (const name of Object.keys(INDEXES).reverse()) await q.query(`DROP INDEX IF EXISTS ${name}`);
  }
}
