import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When a key stops being accepted, if its creator said so (`expiresAt`): a key lived until it was
 * revoked, so a runtime's key forgotten in a retired deployment stayed good for years. Null for
 * every key made before, which keeps them as they were.
 */
export class ApiKeyExpiry1764830000000 implements MigrationInterface {
  name = 'ApiKeyExpiry1764830000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key ADD COLUMN expires_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key DROP COLUMN expires_at`);
  }
}
