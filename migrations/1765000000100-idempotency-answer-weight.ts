import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The answers idempotency keys keep (`response_body`, a copy of the call's answer, its arguments
 * included, kept 24 hours for replays) counted in what the organization's runs and tool calls store
 * (RUNS_MAX_BYTES_PER_ORG), as the call's own arguments and result are (migration 1764523000000):
 * they were counted by nothing, so every call sent with a key stored its arguments twice, once
 * uncounted (attack round 19, Z-N1). Measured as a call is, past the same 2 KB floor, so the
 * usual small answer fires no trigger; the sweep that removes expired keys gives their bytes back.
 */
const WEIGHT = `coalesce(pg_column_size(NEW.response_body), 0)`;
const FLOOR = 2048;

export class IdempotencyAnswerWeight1765000000100 implements MigrationInterface {
  name = 'IdempotencyAnswerWeight1765000000100';

  async up(q: QueryRunner): Promise<void> {
    // A constant default: no table is rewritten.
    await q.query(`ALTER TABLE idempotency_key ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0`);
    await q.query(
      `CREATE FUNCTION idempotency_key_stored_bytes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.stored_bytes := CASE WHEN ${WEIGHT} > ${FLOOR} THEN ${WEIGHT} ELSE 0 END; RETURN NEW; END $$`,
    );
    await q.query(`CREATE TRIGGER idempotency_key_stored_bytes BEFORE INSERT ON idempotency_key
      FOR EACH ROW WHEN ((${WEIGHT}) > ${FLOOR}) EXECUTE FUNCTION idempotency_key_stored_bytes()`);
    // A claim taken over clears its answer: the old weight given back.
    await q.query(`CREATE TRIGGER idempotency_key_stored_bytes_changed BEFORE UPDATE OF response_body ON idempotency_key
      FOR EACH ROW WHEN ((${WEIGHT}) > ${FLOOR} OR OLD.stored_bytes <> 0) EXECUTE FUNCTION idempotency_key_stored_bytes()`);
    await q.query(`CREATE TRIGGER idempotency_key_usage_added AFTER INSERT ON idempotency_key
      FOR EACH ROW WHEN (NEW.stored_bytes <> 0) EXECUTE FUNCTION run_usage_added()`);
    await q.query(`CREATE TRIGGER idempotency_key_usage_changed AFTER UPDATE ON idempotency_key
      FOR EACH ROW WHEN (NEW.stored_bytes <> OLD.stored_bytes) EXECUTE FUNCTION run_usage_changed()`);
    await q.query(`CREATE TRIGGER idempotency_key_usage_removed AFTER DELETE ON idempotency_key
      FOR EACH ROW WHEN (OLD.stored_bytes <> 0) EXECUTE FUNCTION run_usage_removed()`);
    // The answers kept now, measured as from now on (setting the column to itself fires the triggers).
    await q.query(`UPDATE idempotency_key SET response_body = response_body WHERE pg_column_size(response_body) > ${FLOOR}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`INSERT INTO run_usage (org_id, bytes) SELECT org_id, -sum(stored_bytes) FROM idempotency_key WHERE stored_bytes <> 0 GROUP BY org_id`);
    for (const trigger of ['usage_removed', 'usage_changed', 'usage_added', 'stored_bytes_changed', 'stored_bytes']) {
      await q.query(`DROP TRIGGER idempotency_key_${trigger} ON idempotency_key`);
    }
    await q.query(`DROP FUNCTION idempotency_key_stored_bytes()`);
    await q.query(`ALTER TABLE idempotency_key DROP COLUMN stored_bytes`);
  }
}
