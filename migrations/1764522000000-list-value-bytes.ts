import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The size, as the database sends it, of each JSON value a list answers that can be large, so a
 * page can end in the database once its rows pass the byte budget (src/database/keyset-page.ts).
 * A list read 201 rows to keep what fit in 4 MiB: 200 runs of a 1 MB transcript made one
 * `GET /runs?limit=200` bring 200 MB into the node. Text has its length in its header
 * (octet_length reads no value), but a JSON value's text form has to be rebuilt to be measured,
 * so it is measured once, when written. Not pg_column_size: that is the compressed size, and
 * repetitive content compresses a thousand times. NULL where the value is NULL.
 */
const COLUMNS: Record<string, string[]> = {
  agent: ['draft'],
  agent_version: ['spec', 'tool_digests'],
  tool_call: ['arguments', 'executed_arguments', 'result'],
  approval: ['approved_arguments'],
  audit_event: ['data'],
  knowledge_document: ['metadata'],
  run: ['messages', 'pending', 'compaction'],
  mcp_connection: ['tools', 'risk_overrides', 'error'],
};

export class ListValueBytes1764522000000 implements MigrationInterface {
  name = 'ListValueBytes1764522000000';

  async up(q: QueryRunner): Promise<void> {
    for (const [table, columns] of Object.entries(COLUMNS)) {
      // One ALTER per table: adding a stored column rewrites the table, once for all its columns.
      const add = columns.map((c) => `ADD COLUMN ${c}_bytes integer GENERATED ALWAYS AS (octet_length(${c}::text)) STORED`);
      await q.query(`ALTER TABLE ${table} ${add.join(', ')}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [table, columns] of Object.entries(COLUMNS)) {
      await q.query(`ALTER TABLE ${table} ${columns.map((c) => `DROP COLUMN ${c}_bytes`).join(', ')}`);
    }
  }
}
