import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many times in a row a run's step failed on an error of the platform. Such a step was given
 * back and tried again for ever, calling the model (and paying for it) every few seconds, when
 * the error was one that the next try repeats; now the run fails after a few (run-engine.service.ts).
 */
export class RunStepFailures1764521000000 implements MigrationInterface {
  name = 'RunStepFailures1764521000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run ADD COLUMN step_failures integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run DROP COLUMN step_failures`);
  }
}
