import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What an agent remembers (the `memory` and `memory-write` capabilities): one row per memory,
 * per agent, per organization, searchable by full text over its tags and content.
 */
export class AgentMemory1764482000000 implements MigrationInterface {
  name = 'AgentMemory1764482000000';

  async up(q: QueryRunner): Promise<void> {
    // array_to_string is only STABLE because some element types print differently under some
    // settings; for text[] it is a pure function, and a generated column needs one that says so.
    await q.query(`
      CREATE FUNCTION agent_memory_tags_text(tags text[]) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN array_to_string(tags, ' ')`);
    await q.query(`
      CREATE TABLE agent_memory (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        agent_id uuid NOT NULL,
        content text NOT NULL,
        tags text[] NOT NULL DEFAULT '{}',
        -- Tags weigh more than the content: they are the agent's own words for what it kept.
        search tsvector GENERATED ALWAYS AS (
          setweight(to_tsvector('english'::regconfig, agent_memory_tags_text(tags)), 'A') ||
          setweight(to_tsvector('english'::regconfig, content), 'B')
        ) STORED,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- A memory can only belong to an agent of its own organization, whatever the code does.
        FOREIGN KEY (org_id, agent_id) REFERENCES agent (org_id, id) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX agent_memory_agent_idx ON agent_memory (org_id, agent_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX agent_memory_search_idx ON agent_memory USING GIN (search)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_memory`);
    await q.query(`DROP FUNCTION agent_memory_tags_text(text[])`);
  }
}
