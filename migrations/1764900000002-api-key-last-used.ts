import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When each key was last used to authenticate a request, to within a node's sweep (ApiKeyUsage):
 * an administrator finds the keys nothing uses any more, and revokes them, without guessing.
 * Keys used before this migration read null until their next request.
 */
export class ApiKeyLastUsed1764900000002 implements MigrationInterface {
  name = 'ApiKeyLastUsed1764900000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key ADD COLUMN IF NOT EXISTS last_used_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key DROP COLUMN IF EXISTS last_used_at`);
  }
}
