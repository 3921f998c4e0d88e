import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An agent may publish again the content of an older version (a rollback: v2 misbehaves, the
 * draft goes back to v1's spec, publish makes it v3 and `latest`). API.md answers a publish with
 * 201 unless the content equals the LATEST version's; the unique key refused the rollback with a
 * 409 the contract does not have. What "nothing changed" means is now checked against the latest
 * version only, under the agent row's lock (VersionsService).
 */
export class VersionContentNotUnique1764495100000 implements MigrationInterface {
  name = 'VersionContentNotUnique1764495100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_version DROP CONSTRAINT agent_version_content_key`);
  }

  /** Fails, and says so, once an agent has published one content twice: those versions are immutable. */
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_version ADD CONSTRAINT agent_version_content_key UNIQUE (agent_id, content_hash)`);
  }
}
