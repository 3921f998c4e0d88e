import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each organization's agents weigh (drafts and descriptions, published versions' specs and
 * tool digests), kept by the database as they are written, for AGENTS_MAX_BYTES_PER_ORG. Unbounded,
 * one builder key wrote 40 agents with 1 MiB drafts in 10.6 s, and versions, which are never
 * deleted, grow with every publish of a changed draft (attack round 8). Statement triggers with
 * transition tables, as for knowledge_usage (1764522900000): made before the counts are summed, so
 * no write of a node still on the old code is missed or counted twice.
 */
const AGENT_WEIGHT = `coalesce(draft_bytes, 0) + coalesce(octet_length(description), 0)`;
const VERSION_WEIGHT = `coalesce(spec_bytes, 0) + coalesce(tool_digests_bytes, 0)`;

export class AgentUsage1764522950000 implements MigrationInterface {
  name = 'AgentUsage1764522950000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE agent_usage (
      org_id uuid PRIMARY KEY REFERENCES org(id) ON DELETE CASCADE,
      bytes bigint NOT NULL CHECK (bytes >= 0)
    )`);
    const add = (weight: string) => `
        INSERT INTO agent_usage (org_id, bytes)
          SELECT org_id, sum(${weight}) FROM added GROUP BY org_id
          ON CONFLICT (org_id) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;`;
    const remove = (weight: string) => `
        UPDATE agent_usage u SET bytes = u.bytes - r.bytes
          FROM (SELECT org_id, sum(${weight}) AS bytes FROM removed GROUP BY org_id) r
         WHERE u.org_id = r.org_id;`;
    const fn = async (name: string, body: string) =>
      q.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
    await fn('agent_usage_added', add(AGENT_WEIGHT));
    await fn('agent_usage_removed', remove(AGENT_WEIGHT));
    await fn('agent_usage_changed', remove(AGENT_WEIGHT) + add(AGENT_WEIGHT));
    // Versions are only ever inserted (agent_version_no_change refuses the rest).
    await fn('agent_version_usage_added', add(VERSION_WEIGHT));
    await q.query(`CREATE TRIGGER agent_usage_added AFTER INSERT ON agent
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION agent_usage_added()`);
    await q.query(`CREATE TRIGGER agent_usage_removed AFTER DELETE ON agent
      REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION agent_usage_removed()`);
    await q.query(`CREATE TRIGGER agent_usage_changed AFTER UPDATE ON agent
      REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION agent_usage_changed()`);
    await q.query(`CREATE TRIGGER agent_version_usage_added AFTER INSERT ON agent_version
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION agent_version_usage_added()`);
    await q.query(`
      INSERT INTO agent_usage (org_id, bytes)
      SELECT org_id, sum(bytes) FROM (
        SELECT org_id, ${AGENT_WEIGHT} AS bytes FROM agent
        UNION ALL
        SELECT org_id, ${VERSION_WEIGHT} AS bytes FROM agent_version
      ) w GROUP BY org_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER agent_version_usage_added ON agent_version`);
    await q.query(`DROP TRIGGER agent_usage_changed ON agent`);
    await q.query(`DROP TRIGGER agent_usage_removed ON agent`);
    await q.query(`DROP TRIGGER agent_usage_added ON agent`);
    await q.query(`DROP FUNCTION agent_version_usage_added(), agent_usage_changed(), agent_usage_removed(), agent_usage_added()`);
    await q.query(`DROP TABLE agent_usage`);
  }
}
