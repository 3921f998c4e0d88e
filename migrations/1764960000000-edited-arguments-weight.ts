import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An approver's edited arguments (`executed_arguments`, up to a body's megabyte) counted in what the
 * organization's runs and tool calls store (RUNS_MAX_BYTES_PER_ORG), as the call's own arguments and
 * result are (migration 1764523000000): they were stored beside the call and counted by nothing, so
 * an approver of a full organization added a megabyte a decision past the bound (attack round 19,
 * Z-F3). Rows edited before are measured again here, through the same trigger.
 */
const WEIGHT = `coalesce(pg_column_size(NEW.arguments), 0) + coalesce(pg_column_size(NEW.executed_arguments), 0) + coalesce(pg_column_size(NEW.result), 0)`;
const OLD_WEIGHT = `coalesce(pg_column_size(NEW.arguments), 0) + coalesce(pg_column_size(NEW.result), 0)`;
/** As before: a call's values up to this are not counted, so the hottest table's writes fire no trigger. */
const FLOOR = 2048;

async function triggers(q: QueryRunner, weight: string, columns: string): Promise<void> {
  await q.query(
    `CREATE OR REPLACE FUNCTION tool_call_stored_bytes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.stored_bytes := CASE WHEN ${weight} > ${FLOOR} THEN ${weight} ELSE 0 END; RETURN NEW; END $$`,
  );
  await q.query(`DROP TRIGGER tool_call_stored_bytes ON tool_call`);
  await q.query(`DROP TRIGGER tool_call_stored_bytes_changed ON tool_call`);
  await q.query(`CREATE TRIGGER tool_call_stored_bytes BEFORE INSERT ON tool_call
    FOR EACH ROW WHEN ((${weight}) > ${FLOOR}) EXECUTE FUNCTION tool_call_stored_bytes()`);
  await q.query(`CREATE TRIGGER tool_call_stored_bytes_changed BEFORE UPDATE OF ${columns} ON tool_call
    FOR EACH ROW WHEN ((${weight}) > ${FLOOR} OR OLD.stored_bytes <> 0) EXECUTE FUNCTION tool_call_stored_bytes()`);
}

export class EditedArgumentsWeight1764960000000 implements MigrationInterface {
  name = 'EditedArgumentsWeight1764960000000';

  async up(q: QueryRunner): Promise<void> {
    await triggers(q, WEIGHT, 'arguments, executed_arguments, result');
    // Setting the column to itself fires the trigger: each edited call weighed as from now on, its change counted.
    await q.query(`UPDATE tool_call SET executed_arguments = executed_arguments WHERE executed_arguments IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await triggers(q, OLD_WEIGHT, 'arguments, result');
    await q.query(`UPDATE tool_call SET result = result WHERE executed_arguments IS NOT NULL`);
  }
}
