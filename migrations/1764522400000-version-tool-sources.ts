import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where each tool of a version sent its calls at publish (`{ name: source }`, see sourceOf), beside
 * the digests. A digest tells that a tool changed, not that another server's tool took its name
 * (a pinned MCP tool gone, a copy listed by another bound connection): drift said `changed` for
 * both. Versions published before this have none (null) and keep the old reading. Adding a column
 * is no update of a row: the immutability trigger does not fire.
 */
export class VersionToolSources1764522400000 implements MigrationInterface {
  name = 'VersionToolSources1764522400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_version ADD COLUMN tool_sources jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_version DROP COLUMN tool_sources`);
  }
}
