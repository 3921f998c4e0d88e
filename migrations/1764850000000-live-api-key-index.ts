import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An organization's live keys (neither revoked nor expired), counted at every key's creation and
 * by `GET /orgs/{id}/usage`. The index of unrevoked keys (migration 1764524021000) held expired
 * keys for good, and the count filtered them row by row: an admin key making keys that expire a
 * second later (they no longer count against the 1,000) grew it without a bound, 500,000 of them
 * made each count a sequential scan of 75 to 90 ms (attack round 17, V-F4). Keyed by expiry too,
 * the count reads the keys without one and the ones not yet expired as two ranges.
 */
export class LiveApiKeyIndex1764850000000 implements MigrationInterface {
  name = 'LiveApiKeyIndex1764850000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS api_key_live_idx ON api_key (org_id, expires_at) WHERE revoked_at IS NULL`);
    await q.query(`DROP INDEX IF EXISTS api_key_active_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS api_key_active_idx ON api_key (org_id) WHERE revoked_at IS NULL`);
    await q.query(`DROP INDEX IF EXISTS api_key_live_idx`);
  }
}
