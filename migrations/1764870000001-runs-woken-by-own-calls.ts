import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A settled call wakes the run its `run_id` names only when it is one of that run's calls (entry
 * point `run`). A REST or MCP call may name any platform run's id (any agent key reads them) and is
 * not one of its calls (docs/api.md), yet its decision or expiry cleared the waiting run's
 * `not_before` and wrote its row: the run was then probed by every poll of every node until its own
 * approvals were decided, the cost migration 1764522600000 removed, brought back by another
 * runtime's calls (attack round 18, W-F3).
 */
export class RunsWokenByOwnCalls1764870000001 implements MigrationInterface {
  name = 'RunsWokenByOwnCalls1764870000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION run_woken_by_settled_call() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.entry_point = 'run' AND NEW.run_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
          UPDATE run SET wakes = wakes + 1,
                 not_before = CASE WHEN status = 'waiting_for_approval' THEN NULL ELSE not_before END
           WHERE id = NEW.run_id::uuid AND org_id = NEW.org_id;
        END IF;
        RETURN NULL;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION run_woken_by_settled_call() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.run_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
          UPDATE run SET wakes = wakes + 1,
                 not_before = CASE WHEN status = 'waiting_for_approval' THEN NULL ELSE not_before END
           WHERE id = NEW.run_id::uuid AND org_id = NEW.org_id;
        END IF;
        RETURN NULL;
      END $$`);
  }
}
