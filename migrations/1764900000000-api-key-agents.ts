import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agents a runtime key may act for (`agentIds` on a key's creation): null, every agent of its
 * organization. Agents are never deleted, so the ids need no foreign key to stay meaningful; the
 * creation checks each names an agent of the key's organization. The bound matches the API's (100).
 */
export class ApiKeyAgents1764900000000 implements MigrationInterface {
  name = 'ApiKeyAgents1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key ADD COLUMN IF NOT EXISTS agent_ids uuid[]`);
    await q.query(`ALTER TABLE api_key ADD CONSTRAINT api_key_agent_ids_bound CHECK (agent_ids IS NULL OR cardinality(agent_ids) BETWEEN 1 AND 100)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_key DROP CONSTRAINT IF EXISTS api_key_agent_ids_bound`);
    await q.query(`ALTER TABLE api_key DROP COLUMN IF EXISTS agent_ids`);
  }
}
