import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The people who signed in through the identity provider, by organization: records hold a
 * person's id as a UUID derived from the issuer and `sub` (an approval's `decidedBy`, a version's
 * `publishedBy`), which told nobody who it was. Written the first time a node sees a person of an
 * organization; read by `GET /principals`.
 */
export class Person1764523050000 implements MigrationInterface {
  name = 'Person1764523050000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE person (
      org_id uuid NOT NULL REFERENCES org(id) ON DELETE CASCADE,
      id uuid NOT NULL,
      subject text NOT NULL,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, id)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE person`);
  }
}
