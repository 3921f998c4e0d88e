import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /tool-calls` with `runId` and `agentId` or `status`: 1764524020000 left these to the run
 * index, which walked every call of that run id testing the other filters. A REST caller names any
 * run id, so one run id's calls are as many as the organization's agent keys make: 300,000
 * succeeded calls under one run id, and each `?runId=…&status=failed` page (any viewer key) read
 * all of them, 75 to 420 ms; eight at once took another organization's `GET /agents` from p50 8 ms
 * to 53 ms (attack round 18, W-F1). Each filter set now has an index of its columns then
 * `(created_at, id)`, of the calls that name a run only. Built CONCURRENTLY, outside a
 * transaction, as 1764524020000's.
 */
const INDEXES = {
  tool_call_org_run_status_idx: `tool_call (org_id, run_id, status, created_at DESC, id DESC) WHERE run_id IS NOT NULL`,
  tool_call_org_agent_run_idx: `tool_call (org_id, agent_id, run_id, created_at DESC, id DESC) WHERE run_id IS NOT NULL`,
  tool_call_org_agent_run_status_idx: `tool_call (org_id, agent_id, run_id, status, created_at DESC, id DESC) WHERE run_id IS NOT NULL`,
};

export class ToolCallRunFilterIndexes1764870000000 implements MigrationInterface {
  name = 'ToolCallRunFilterIndexes1764870000000';
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
