import { MigrationInterface, QueryRunner } from 'typeorm';

const INDEXES = {
  audit_event_org_at_idx: `audit_event (org_id, at DESC, seq DESC)`,
  audit_event_org_type_at_idx: `audit_event (org_id, type, at DESC, seq DESC)`,
};
const REPLACED = {
  audit_event_org_idx: `audit_event (org_id, seq DESC)`,
  audit_event_org_type_idx: `audit_event (org_id, type, seq DESC)`,
};

/**
 * `GET /audit-events` newest first by time (src/audit/audit.repository.ts): `since` and the new
 * `until` become bounds of the index scan. By sequence, a narrow window walked the organization's
 * whole log, filtering on `at` (1.5 s at 2,000,000 events for a `since` in the future). The two
 * indexes replace the list's two by sequence, which nothing else reads, so an audited write
 * maintains as many indexes as before. Built CONCURRENTLY, outside a transaction, as
 * 1764522570000's: audit_event takes every audited write of every organization.
 */
export class AuditListByTime1764522850000 implements MigrationInterface {
  name = 'AuditListByTime1764522850000';
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
    for (const name of Object.keys(REPLACED)) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  }

  // Not CONCURRENTLY: TypeORM reverts in a transaction whatever `transaction` says.
  async down(q: QueryRunner): Promise<void> {
    for (const [name, definition] of Object.entries(REPLACED)) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${definition}`);
    for (const name of Object.keys(INDEXES)) await q.query(`DROP INDEX IF EXISTS ${name}`);
  }
}
