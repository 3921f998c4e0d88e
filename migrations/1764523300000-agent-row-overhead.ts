import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every agent and published version also counts 512 bytes for being a row (AGENTS_MAX_BYTES_PER_ORG):
 * an agent with a tiny draft counted about 40 bytes and took about 420 on the volume with its
 * indexes, so the 1 GiB bound let an organization keep some 11 GB of agents (attack round 10,
 * E-F9). The triggers of 1764522950000 are replaced and the totals summed again, with the tables
 * locked against writes meanwhile so that no write counted the old way is lost in the sum.
 */
const ROW = 512;
const AGENT_WEIGHT = `${ROW} + coalesce(draft_bytes, 0) + coalesce(octet_length(description), 0)`;
const VERSION_WEIGHT = `${ROW} + coalesce(spec_bytes, 0) + coalesce(tool_digests_bytes, 0)`;

async function defineTriggers(q: QueryRunner, agentWeight: string, versionWeight: string): Promise<void> {
  const add = (weight: string) => `
      INSERT INTO agent_usage (org_id, bytes)
        SELECT org_id, sum(${weight}) FROM added GROUP BY org_id
        ON CONFLICT (org_id) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;`;
  const remove = (weight: string) => `
      UPDATE agent_usage u SET bytes = u.bytes - r.bytes
        FROM (SELECT org_id, sum(${weight}) AS bytes FROM removed GROUP BY org_id) r
       WHERE u.org_id = r.org_id;`;
  const fn = (name: string, body: string) =>
    q.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
  await fn('agent_usage_added', add(agentWeight));
  await fn('agent_usage_removed', remove(agentWeight));
  await fn('agent_usage_changed', remove(agentWeight) + add(agentWeight));
  await fn('agent_version_usage_added', add(versionWeight));
  await q.query(`DELETE FROM agent_usage`);
  await q.query(`
    INSERT INTO agent_usage (org_id, bytes)
    SELECT org_id, sum(bytes) FROM (
      SELECT org_id, ${agentWeight} AS bytes FROM agent
      UNION ALL
      SELECT org_id, ${versionWeight} AS bytes FROM agent_version
    ) w GROUP BY org_id`);
}

export class AgentRowOverhead1764523300000 implements MigrationInterface {
  name = 'AgentRowOverhead1764523300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE agent, agent_version IN SHARE MODE`);
    await defineTriggers(q, AGENT_WEIGHT, VERSION_WEIGHT);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE agent, agent_version IN SHARE MODE`);
    await defineTriggers(q, `coalesce(draft_bytes, 0) + coalesce(octet_length(description), 0)`, `coalesce(spec_bytes, 0) + coalesce(tool_digests_bytes, 0)`);
  }
}
