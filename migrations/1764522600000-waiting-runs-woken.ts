import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runs waiting for approval are woken by their calls, not found by every poll. Each poll of every
 * node probed every waiting run's calls (quadratic in one organization's tool calls: 8.8 s per
 * poll at 21,800 waiting runs, every other organization's resumed runs behind it). A paused run
 * now carries `not_before` = when its last approval expires (set by the step that paused it), and
 * this trigger, in the transaction that settles one of its calls, clears it and counts the wake-up
 * (`wakes`): whichever of the settlement and the pause commits second sees the other (the second
 * to update the row waits for the first's lock and reads the row as the first left it), so no
 * decision is missed. A trigger, not code: every path that settles a call (a decision, a rejection,
 * the expiry and interruption sweeps, a cancelled run's approvals) is an UPDATE of tool_call.
 *
 * `run_id` is text (a runtime outside names its own runs): only a UUID can name one of ours.
 * Waiting runs from before this keep `not_before` unset and are probed as before until they resume.
 */
export class WaitingRunsWoken1764522600000 implements MigrationInterface {
  name = 'WaitingRunsWoken1764522600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run ADD COLUMN wakes integer NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE FUNCTION run_woken_by_settled_call() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.run_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
          UPDATE run SET wakes = wakes + 1,
                 not_before = CASE WHEN status = 'waiting_for_approval' THEN NULL ELSE not_before END
           WHERE id = NEW.run_id::uuid AND org_id = NEW.org_id;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER tool_call_settled_wakes_run AFTER UPDATE OF status ON tool_call
      FOR EACH ROW WHEN (OLD.status IN ('pending_approval', 'running') AND NEW.status NOT IN ('pending_approval', 'running') AND NEW.run_id IS NOT NULL)
      EXECUTE FUNCTION run_woken_by_settled_call()`);
    // The claim's gate: the runs a poll may take, by when they may be taken.
    await q.query(`CREATE INDEX run_claim_gate ON run (not_before) WHERE status IN ('running', 'waiting_for_approval')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX run_claim_gate`);
    await q.query(`DROP TRIGGER tool_call_settled_wakes_run ON tool_call`);
    await q.query(`DROP FUNCTION run_woken_by_settled_call()`);
    await q.query(`ALTER TABLE run DROP COLUMN wakes`);
  }
}
