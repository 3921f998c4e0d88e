import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run gives its slot back between the attempts of a model request (run-engine.service.ts,
 * `modelRetryLater`), so the attempts made are counted on the run, not in the process that made
 * them: whichever node claims it next continues the count, and gives up after RUN_MODEL_RETRIES.
 */
export class RunModelAttempts1764522700000 implements MigrationInterface {
  name = 'RunModelAttempts1764522700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run ADD COLUMN model_attempts integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run DROP COLUMN model_attempts`);
  }
}
