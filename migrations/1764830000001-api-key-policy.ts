import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The longest an organization's new API keys may live (`PUT /orgs/{id}/api-key-policy`): a key
 * made without an expiry then gets one, and one asking for longer is refused. Null: no bound (as
 * every organization was).
 */
export class ApiKeyPolicy1764830000001 implements MigrationInterface {
  name = 'ApiKeyPolicy1764830000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE org ADD COLUMN api_key_max_lifetime_days integer CONSTRAINT org_api_key_max_lifetime_days CHECK (api_key_max_lifetime_days BETWEEN 1 AND 3650)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE org DROP COLUMN api_key_max_lifetime_days`);
  }
}
