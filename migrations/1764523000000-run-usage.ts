import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each organization's runs and tool calls store (RUNS_MAX_BYTES_PER_ORG): runs' input,
 * transcript, pending calls and answer, their events' data, the whole results kept for offloaded
 * calls, and tool calls' arguments and results past 2 KB. Unbounded, one agent key wrote about
 * 30 MiB a second within its rate limit (attack round 9, D-F4).
 *
 * Unlike agent_usage and knowledge_usage, the total is not one row per organization: every step of
 * every run writes here, and a step holding its organization's row to commit would make an
 * organization's runs step one at a time, and a key's revocation (which fails all its runs in one
 * statement) wait on, and deadlock with, the steps. So writes only append their change, never
 * lock, and RunUsageCompactor folds each organization's changes into one row every
 * SWEEP_INTERVAL_SECONDS (a DELETE ... RETURNING whose sum is inserted again in the same statement).
 *
 * A row's weight is measured once, when written, by a BEFORE trigger into its `stored_bytes`
 * (`pg_column_size`: a transcript is not printed as text, which cost 100 ms a step at 10 MB), and
 * the change counted is the new weight less the old one read from that column, so the total is
 * always the sum of the rows' `stored_bytes`, whatever the measure sees of a value TOASTed or not.
 */
const RUN_WEIGHT = `coalesce(pg_column_size(NEW.input), 0) + coalesce(pg_column_size(NEW.messages), 0)
  + coalesce(pg_column_size(NEW.pending), 0) + coalesce(pg_column_size(NEW.compaction), 0) + coalesce(pg_column_size(NEW.output), 0)`;
const CALL_WEIGHT = `coalesce(pg_column_size(NEW.arguments), 0) + coalesce(pg_column_size(NEW.result), 0)`;
/** A tool call's arguments and result up to this are not counted: the hottest table's writes then fire no trigger. */
const CALL_FLOOR = 2048;

export class RunUsage1764523000000 implements MigrationInterface {
  name = 'RunUsage1764523000000';

  async up(q: QueryRunner): Promise<void> {
    // No foreign key: its check would take a share lock on the organization's row at every step.
    await q.query(`CREATE TABLE run_usage (org_id uuid NOT NULL, bytes bigint NOT NULL)`);
    await q.query(`CREATE INDEX run_usage_org ON run_usage (org_id)`);
    // A constant default: no table is rewritten.
    for (const table of ['run', 'tool_call', 'tool_call_result']) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0`);
    }
    const fn = async (name: string, body: string) => q.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} END $$`);
    await fn('run_stored_bytes', `NEW.stored_bytes := ${RUN_WEIGHT}; RETURN NEW;`);
    await fn('tool_call_stored_bytes', `NEW.stored_bytes := CASE WHEN ${CALL_WEIGHT} > ${CALL_FLOOR} THEN ${CALL_WEIGHT} ELSE 0 END; RETURN NEW;`);
    await fn('tool_call_result_stored_bytes', `NEW.stored_bytes := coalesce(pg_column_size(NEW.result), 0); RETURN NEW;`);
    await fn('run_usage_added', `INSERT INTO run_usage (org_id, bytes) VALUES (NEW.org_id, NEW.stored_bytes); RETURN NULL;`);
    await fn('run_usage_changed', `INSERT INTO run_usage (org_id, bytes) VALUES (NEW.org_id, NEW.stored_bytes - OLD.stored_bytes); RETURN NULL;`);
    await fn('run_usage_removed', `INSERT INTO run_usage (org_id, bytes) VALUES (OLD.org_id, -OLD.stored_bytes); RETURN NULL;`);
    // Events are written many at once (a revocation fails thousands of runs in one statement): counted per statement.
    await fn('run_event_usage_added', `INSERT INTO run_usage (org_id, bytes) SELECT org_id, sum(data_bytes) FROM added GROUP BY org_id; RETURN NULL;`);
    // Removed one by one: a transition table would copy every removed event's data (megabytes each) to count its size.
    await fn('run_event_usage_removed', `INSERT INTO run_usage (org_id, bytes) VALUES (OLD.org_id, -OLD.data_bytes); RETURN NULL;`);

    // What a run holds changes only when one of these is set: a lease's renewal measures nothing.
    await q.query(`CREATE TRIGGER run_stored_bytes BEFORE INSERT OR UPDATE OF input, messages, pending, compaction, output ON run
      FOR EACH ROW EXECUTE FUNCTION run_stored_bytes()`);
    await q.query(`CREATE TRIGGER tool_call_stored_bytes BEFORE INSERT ON tool_call
      FOR EACH ROW WHEN ((${CALL_WEIGHT}) > ${CALL_FLOOR}) EXECUTE FUNCTION tool_call_stored_bytes()`);
    await q.query(`CREATE TRIGGER tool_call_stored_bytes_changed BEFORE UPDATE OF arguments, result ON tool_call
      FOR EACH ROW WHEN ((${CALL_WEIGHT}) > ${CALL_FLOOR} OR OLD.stored_bytes <> 0) EXECUTE FUNCTION tool_call_stored_bytes()`);
    await q.query(`CREATE TRIGGER tool_call_result_stored_bytes BEFORE INSERT OR UPDATE OF result ON tool_call_result
      FOR EACH ROW EXECUTE FUNCTION tool_call_result_stored_bytes()`);
    for (const table of ['run', 'tool_call', 'tool_call_result']) {
      await q.query(`CREATE TRIGGER ${table}_usage_added AFTER INSERT ON ${table}
        FOR EACH ROW WHEN (NEW.stored_bytes <> 0) EXECUTE FUNCTION run_usage_added()`);
      await q.query(`CREATE TRIGGER ${table}_usage_changed AFTER UPDATE ON ${table}
        FOR EACH ROW WHEN (NEW.stored_bytes <> OLD.stored_bytes) EXECUTE FUNCTION run_usage_changed()`);
      await q.query(`CREATE TRIGGER ${table}_usage_removed AFTER DELETE ON ${table}
        FOR EACH ROW WHEN (OLD.stored_bytes <> 0) EXECUTE FUNCTION run_usage_removed()`);
    }
    await q.query(`CREATE TRIGGER run_event_usage_added AFTER INSERT ON run_event
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION run_event_usage_added()`);
    await q.query(`CREATE TRIGGER run_event_usage_removed AFTER DELETE ON run_event
      FOR EACH ROW WHEN (OLD.data_bytes <> 0) EXECUTE FUNCTION run_event_usage_removed()`);
    // What RUN_RETENTION_DAYS removes, oldest first, without reading the runs under way.
    await q.query(`CREATE INDEX run_completed ON run (completed_at) WHERE completed_at IS NOT NULL`);

    // What is already stored: each row measured as the triggers measure it from now on (an UPDATE
    // that sets a column to itself fires them), after the triggers exist, so no write of a node on
    // the old code is missed; the rows' changes are counted by the triggers as they are set.
    await q.query(`UPDATE run SET input = input`);
    await q.query(`UPDATE tool_call SET result = result WHERE (${CALL_WEIGHT.replace(/NEW\./g, '')}) > ${CALL_FLOOR}`);
    await q.query(`UPDATE tool_call_result SET result = result`);
    await q.query(`INSERT INTO run_usage (org_id, bytes) SELECT org_id, sum(data_bytes) FROM run_event GROUP BY org_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX run_completed`);
    await q.query(`DROP TRIGGER run_event_usage_removed ON run_event`);
    await q.query(`DROP TRIGGER run_event_usage_added ON run_event`);
    for (const table of ['run', 'tool_call', 'tool_call_result']) {
      await q.query(`DROP TRIGGER ${table}_usage_removed ON ${table}`);
      await q.query(`DROP TRIGGER ${table}_usage_changed ON ${table}`);
      await q.query(`DROP TRIGGER ${table}_usage_added ON ${table}`);
    }
    await q.query(`DROP TRIGGER tool_call_result_stored_bytes ON tool_call_result`);
    await q.query(`DROP TRIGGER tool_call_stored_bytes_changed ON tool_call`);
    await q.query(`DROP TRIGGER tool_call_stored_bytes ON tool_call`);
    await q.query(`DROP TRIGGER run_stored_bytes ON run`);
    await q.query(`DROP FUNCTION run_event_usage_removed(), run_event_usage_added(), run_usage_removed(), run_usage_changed(), run_usage_added(),
      tool_call_result_stored_bytes(), tool_call_stored_bytes(), run_stored_bytes()`);
    for (const table of ['run', 'tool_call', 'tool_call_result']) {
      await q.query(`ALTER TABLE ${table} DROP COLUMN stored_bytes`);
    }
    await q.query(`DROP TABLE run_usage`);
  }
}
