import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When the sweep told an organization that a key is about to expire (`api_key.expiring`) and that
 * it has (`api_key.expired`): each said once, by whichever node claims the row first. The index
 * holds only keys with an expiry still to be told, so a sweep reads what is due and nothing else.
 */
export class ApiKeyExpiryEvents1764860000000 implements MigrationInterface {
  name = 'ApiKeyExpiryEvents1764860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key ADD COLUMN expiry_noticed_at timestamptz, ADD COLUMN expiry_recorded_at timestamptz`);
    await q.query(`CREATE INDEX api_key_expiry_due ON api_key (expires_at) WHERE expires_at IS NOT NULL AND revoked_at IS NULL AND expiry_recorded_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX api_key_expiry_due`);
    await q.query(`ALTER TABLE api_key DROP COLUMN expiry_noticed_at, DROP COLUMN expiry_recorded_at`);
  }
}
