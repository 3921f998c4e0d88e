import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The size of each run event's data, measured once when written, as 1764522000000-list-value-bytes
 * does for lists: a run's event stream reads its events about 1 MiB at a time, and measured on
 * every read (printing each JSON value twice to sum it) a whole read of a run at the transcript
 * cap cost half a second of the database's CPU.
 */
export class RunEventBytes1764522100000 implements MigrationInterface {
  name = 'RunEventBytes1764522100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_event ADD COLUMN data_bytes integer GENERATED ALWAYS AS (octet_length(data::text)) STORED`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_event DROP COLUMN data_bytes`);
  }
}
