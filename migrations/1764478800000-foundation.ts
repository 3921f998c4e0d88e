import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organizations, their API keys and the append-only audit log. */
export class Foundation1764478800000 implements MigrationInterface {
  name = 'Foundation1764478800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE org (
        id uuid PRIMARY KEY,
        slug text NOT NULL UNIQUE,
        name text NOT NULL,
        scopes text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_key (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        name text NOT NULL,
        roles text[] NOT NULL,
        token_prefix text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await q.query(`CREATE INDEX api_key_org_idx ON api_key (org_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE audit_event (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id uuid NOT NULL UNIQUE,
        org_id uuid,
        at timestamptz NOT NULL DEFAULT now(),
        type text NOT NULL,
        actor_type text NOT NULL,
        actor_id text NOT NULL,
        target_type text NOT NULL,
        target_id text NOT NULL,
        data jsonb NOT NULL DEFAULT '{}'
      )`);
    await q.query(`CREATE INDEX audit_event_org_idx ON audit_event (org_id, seq DESC)`);
    await q.query(`CREATE INDEX audit_event_org_type_idx ON audit_event (org_id, type, seq DESC)`);
    // Append-only is a property of the table, not a promise of the code.
    await q.query(`
      CREATE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_event is append-only';
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_event_no_change BEFORE UPDATE OR DELETE ON audit_event
      FOR EACH ROW EXECUTE FUNCTION audit_event_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_event`);
    await q.query(`DROP FUNCTION audit_event_append_only()`);
    await q.query(`DROP TABLE api_key`);
    await q.query(`DROP TABLE org`);
  }
}
