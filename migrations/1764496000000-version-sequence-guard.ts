import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The database itself keeps an agent's versions a gapless sequence in which no version repeats
 * the one before it (the "nothing changed" case answers the latest version instead). An older
 * version's content may come back later as a new version: that is a rollback.
 */
export class VersionSequenceGuard1764496000000 implements MigrationInterface {
  name = 'VersionSequenceGuard1764496000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION agent_version_sequence_guard() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        previous text;
      BEGIN
        IF NEW.version = 1 THEN
          RETURN NEW;
        END IF;
        SELECT content_hash INTO previous FROM agent_version WHERE agent_id = NEW.agent_id AND version = NEW.version - 1;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'agent % has no version % before version %', NEW.agent_id, NEW.version - 1, NEW.version
            USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF previous = NEW.content_hash THEN
          RAISE EXCEPTION 'version % of agent % repeats version %', NEW.version, NEW.agent_id, NEW.version - 1
            USING ERRCODE = 'unique_violation';
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER agent_version_sequence_guard BEFORE INSERT ON agent_version
      FOR EACH ROW EXECUTE FUNCTION agent_version_sequence_guard()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER agent_version_sequence_guard ON agent_version`);
    await q.query(`DROP FUNCTION agent_version_sequence_guard()`);
  }
}
