import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Incident response and per-agent accounting (issue 13, governance gaps):
 * - a retired version: calls to it are refused (an agent key could pick an older version to skip
 *   a rule a later one added). Kept beside the version, never in it: a version row is immutable.
 * - a tool disabled for an organization: every version's calls of it are refused.
 * - idempotency keys and per-run budgets are counted per agent: a key (or run id) reused for
 *   another agent is another key (run).
 */
export class Governance1764502000000 implements MigrationInterface {
  name = 'Governance1764502000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_version_retirement (
        org_id uuid NOT NULL REFERENCES org(id),
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        retired_at timestamptz NOT NULL DEFAULT now(),
        retired_by text NOT NULL,
        PRIMARY KEY (agent_id, version),
        FOREIGN KEY (agent_id, version) REFERENCES agent_version (agent_id, version),
        FOREIGN KEY (org_id, agent_id) REFERENCES agent (org_id, id)
      )`);

    await q.query(`
      CREATE TABLE tool_disabled (
        org_id uuid NOT NULL REFERENCES org(id),
        capability_id text NOT NULL,
        -- For an MCP tool: <connection name>/<tool name>.
        tool_id text NOT NULL,
        reason text,
        disabled_at timestamptz NOT NULL DEFAULT now(),
        disabled_by text NOT NULL,
        PRIMARY KEY (org_id, capability_id, tool_id)
      )`);

    // Keys in flight or kept for replay belong to the agent of their call; a key whose call is
    // unknown (a claim in progress at the moment of the upgrade) is let go: its request has not
    // recorded anything yet, so its retry claims it again.
    await q.query(`ALTER TABLE idempotency_key ADD COLUMN agent_id uuid`);
    await q.query(`UPDATE idempotency_key k SET agent_id = c.agent_id FROM tool_call c WHERE c.id = k.tool_call_id`);
    await q.query(`DELETE FROM idempotency_key WHERE agent_id IS NULL`);
    await q.query(`ALTER TABLE idempotency_key ALTER COLUMN agent_id SET NOT NULL`);
    await q.query(`ALTER TABLE idempotency_key DROP CONSTRAINT idempotency_key_pkey`);
    await q.query(`ALTER TABLE idempotency_key ADD PRIMARY KEY (org_id, agent_id, key)`);

    // A run's budget counted so far cannot be split by agent after the fact: runs started before
    // the upgrade keep their count under the agent of their first call.
    await q.query(`ALTER TABLE tool_run_budget ADD COLUMN agent_id uuid`);
    await q.query(`
      UPDATE tool_run_budget b SET agent_id = (
        SELECT c.agent_id FROM tool_call c WHERE c.org_id = b.org_id AND c.run_id = b.run_id ORDER BY c.created_at LIMIT 1
      )`);
    await q.query(`DELETE FROM tool_run_budget WHERE agent_id IS NULL`);
    await q.query(`ALTER TABLE tool_run_budget ALTER COLUMN agent_id SET NOT NULL`);
    await q.query(`ALTER TABLE tool_run_budget DROP CONSTRAINT tool_run_budget_pkey`);
    await q.query(`ALTER TABLE tool_run_budget ADD PRIMARY KEY (org_id, agent_id, run_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_run_budget DROP CONSTRAINT tool_run_budget_pkey`);
    await q.query(`DELETE FROM tool_run_budget a USING tool_run_budget b WHERE a.org_id = b.org_id AND a.run_id = b.run_id AND a.agent_id > b.agent_id`);
    await q.query(`ALTER TABLE tool_run_budget DROP COLUMN agent_id`);
    await q.query(`ALTER TABLE tool_run_budget ADD PRIMARY KEY (org_id, run_id)`);
    await q.query(`ALTER TABLE idempotency_key DROP CONSTRAINT idempotency_key_pkey`);
    await q.query(`DELETE FROM idempotency_key a USING idempotency_key b WHERE a.org_id = b.org_id AND a.key = b.key AND a.agent_id > b.agent_id`);
    await q.query(`ALTER TABLE idempotency_key DROP COLUMN agent_id`);
    await q.query(`ALTER TABLE idempotency_key ADD PRIMARY KEY (org_id, key)`);
    await q.query(`DROP TABLE tool_disabled`);
    await q.query(`DROP TABLE agent_version_retirement`);
  }
}
