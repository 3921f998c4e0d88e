import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A rotated webhook keeps its previous signing secret (sealed) until `previous_secret_expires_at`:
 * deliveries meanwhile carry a signature under each, as Standard Webhooks prescribes for rotation,
 * so a receiver verifies with whichever it holds while it moves to the new one. Both or neither.
 */
export class WebhookPreviousSecret1764522520000 implements MigrationInterface {
  name = 'WebhookPreviousSecret1764522520000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoint ADD COLUMN previous_secret_sealed text, ADD COLUMN previous_secret_expires_at timestamptz`);
    await q.query(`
      ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_previous_secret_whole
        CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL))`);
    // The dispatchers' periodic removal of expired ones reads only the few endpoints in rotation.
    await q.query(
      `CREATE INDEX webhook_endpoint_previous_secret_idx ON webhook_endpoint (previous_secret_expires_at) WHERE previous_secret_expires_at IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_endpoint_previous_secret_idx`);
    await q.query(`ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_previous_secret_whole`);
    await q.query(`ALTER TABLE webhook_endpoint DROP COLUMN previous_secret_sealed, DROP COLUMN previous_secret_expires_at`);
  }
}
