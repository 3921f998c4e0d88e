import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An organization's runs `running` now, counted at each run's start against
 * RUN_MAX_RUNNING_PER_ORG: its finished runs stay (millions over time), and counting through
 * `run_org_created` would walk them all. This index holds the running ones alone, at most about
 * that bound an organization (attack round 13, K-F4).
 */
export class RunningRunsPerOrg1764600000000 implements MigrationInterface {
  name = 'RunningRunsPerOrg1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS run_running_org ON run (org_id) WHERE status = 'running'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS run_running_org`);
  }
}
