import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes for the filters of `GET /runs`, `GET /tool-calls` and `GET /approvals` that had none
 * holding them (attack round 11, G-F3). A list is newest first within its filters, so each filter
 * set needs an index with its columns, then `(created_at, id)`: without one the page was found by
 * walking the organization's rows, or, for `GET /runs?agentId=`, by a sequential scan of every
 * organization's runs (1,000,000 runs: 200 ms a request; ten at once from one viewer key, within
 * its rate limit, took another organization's `GET /agents` from 3 ms to 150 ms). `runId` filters
 * of tool calls are left to the run index (docs/security.md). Built CONCURRENTLY, outside a
 * transaction, as 1764522850000's: these tables take every tool call and run step.
 */
const INDEXES = {
  run_org_agent_created: `run (org_id, agent_id, created_at DESC, id DESC)`,
  run_org_status_created: `run (org_id, status, created_at DESC, id DESC)`,
  run_org_agent_status_created: `run (org_id, agent_id, status, created_at DESC, id DESC)`,
  tool_call_org_agent_status_idx: `tool_call (org_id, agent_id, status, created_at DESC, id DESC)`,
  approval_org_agent_idx: `approval (org_id, agent_id, created_at DESC, id DESC)`,
  approval_org_agent_status_idx: `approval (org_id, agent_id, status, created_at DESC, id DESC)`,
};

export class ListFilterIndexes1764524020000 implements MigrationInterface {
  name = 'ListFilterIndexes1764524020000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    for (const [name, definition] of Object.entries(INDEXES)) {
      // A build cut short (the node stopped mid-way) leaves an invalid index that IF NOT EXISTS would keep.
      const invalid = (await q.query(`SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1 AND NOT i.indisvalid`, [
        name,
      ])) as unknown[];
      if (invalid.length > 0) await q.query(`DROP INDEX CONCURRENTLY ${name}`);
      await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${definition}`);
    }
  }

  // Not CONCURRENTLY: TypeORM reverts in a transaction whatever `transaction` says.
  async down(q: QueryRunner): Promise<void> {
    for (const name of Object.keys(INDEXES)) await q.query(`DROP INDEX IF EXISTS ${name}`);
  }
}
