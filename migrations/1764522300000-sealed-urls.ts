import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A URL's query may carry its token (`?api_key=`, a receiver's `?token=`): such a URL is kept
 * sealed here, and `url` holds it as answers show it, its query values `[redacted]`
 * (src/common/url-secrets.ts). Rows saved before are sealed by the application when it starts: a
 * migration has no SECRETS_KEY.
 */
export class SealedUrls1764522300000 implements MigrationInterface {
  name = 'SealedUrls1764522300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection ADD COLUMN url_sealed text`);
    await q.query(`ALTER TABLE webhook_endpoint ADD COLUMN url_sealed text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection DROP COLUMN url_sealed`);
    await q.query(`ALTER TABLE webhook_endpoint DROP COLUMN url_sealed`);
  }
}
