import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each organization's agent memories weigh, kept by the database as memories come and go, for
 * MEMORY_MAX_BYTES_PER_ORG. Nothing bounded them: an agent keeps up to its `maxMemories` (a builder
 * sets up to 100,000), an organization's agents are bounded only by their bytes, and a memory of
 * 2,000 characters of distinct words took 16 KB of the volume (row, search vector and its index
 * entries), its text 2 KB of that (attack round 16, T-F1).
 *
 * A memory weighs `agent_memory_weight`: 512 bytes for its row, its text and tags (UTF-8), and 64
 * bytes for each word of its search vector (what the vector and its GIN entries take, measured at
 * about 50 a word). It reads only what the row stores, so a memory weighs the same when it goes as
 * when it came. Statement triggers with transition tables add one change per statement, so
 * deleting an agent (its memories cascaded, one statement) updates the counter once.
 *
 * The table is locked against writes before the triggers are made and the weights summed, so no
 * memory of a node still running is missed or counted twice.
 */
export const MEMORY_WEIGHT_SQL = `512 + octet_length(content) + octet_length(agent_memory_tags_text(tags)) + 64 * length(search)`;

export class MemoryUsage1764820000000 implements MigrationInterface {
  name = 'MemoryUsage1764820000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE agent_memory IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`CREATE FUNCTION agent_memory_weight(content text, tags text[], search tsvector) RETURNS bigint
      LANGUAGE sql IMMUTABLE PARALLEL SAFE
      RETURN ${MEMORY_WEIGHT_SQL}`);
    await q.query(`CREATE TABLE memory_usage (
      org_id uuid PRIMARY KEY REFERENCES org(id) ON DELETE CASCADE,
      bytes bigint NOT NULL CHECK (bytes >= 0)
    )`);
    const add = `
        INSERT INTO memory_usage (org_id, bytes)
          SELECT org_id, sum(agent_memory_weight(content, tags, search)) FROM added GROUP BY org_id
          ON CONFLICT (org_id) DO UPDATE SET bytes = memory_usage.bytes + EXCLUDED.bytes;`;
    const remove = `
        UPDATE memory_usage u SET bytes = u.bytes - r.bytes
          FROM (SELECT org_id, sum(agent_memory_weight(content, tags, search)) AS bytes FROM removed GROUP BY org_id) r
         WHERE u.org_id = r.org_id;`;
    const fn = (name: string, body: string) => q.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
    await fn('memory_usage_added', add);
    await fn('memory_usage_removed', remove);
    await fn('memory_usage_changed', remove + add);
    await q.query(`CREATE TRIGGER memory_usage_added AFTER INSERT ON agent_memory
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_usage_added()`);
    await q.query(`CREATE TRIGGER memory_usage_removed AFTER DELETE ON agent_memory
      REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_usage_removed()`);
    await q.query(`CREATE TRIGGER memory_usage_changed AFTER UPDATE ON agent_memory
      REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_usage_changed()`);
    await q.query(`INSERT INTO memory_usage (org_id, bytes) SELECT org_id, sum(agent_memory_weight(content, tags, search)) FROM agent_memory GROUP BY org_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER memory_usage_changed ON agent_memory`);
    await q.query(`DROP TRIGGER memory_usage_removed ON agent_memory`);
    await q.query(`DROP TRIGGER memory_usage_added ON agent_memory`);
    await q.query(`DROP FUNCTION memory_usage_changed(), memory_usage_removed(), memory_usage_added()`);
    await q.query(`DROP TABLE memory_usage`);
    await q.query(`DROP FUNCTION agent_memory_weight(text, text[], tsvector)`);
  }
}
