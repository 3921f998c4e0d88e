import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each organization's knowledge documents weigh (text, title and metadata, as
 * KNOWLEDGE_MAX_BYTES_PER_ORG counts them), kept by the database as documents come and go. The limit
 * was checked by summing every document of the organization on each insert: linear in what it
 * stores, read under the organization's lock, so at a hundred thousand documents every write waited
 * on the last one's scan. Statement triggers with transition tables add one row's change per
 * statement, so deleting a collection of many documents (cascaded, one statement) updates the
 * counter once, not once per document.
 *
 * The triggers are made before the counts are summed: CREATE TRIGGER waits for writes in flight and
 * holds new ones until this migration commits, so no document of a node still running the old code
 * is missed or counted twice.
 */
const WEIGHT = `octet_length(content) + octet_length(title) + coalesce(metadata_bytes, 0)`;

export class KnowledgeUsage1764522900000 implements MigrationInterface {
  name = 'KnowledgeUsage1764522900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE knowledge_usage (
      org_id uuid PRIMARY KEY REFERENCES org(id) ON DELETE CASCADE,
      bytes bigint NOT NULL CHECK (bytes >= 0)
    )`);
    const add = `
        INSERT INTO knowledge_usage (org_id, bytes)
          SELECT org_id, sum(${WEIGHT}) FROM added GROUP BY org_id
          ON CONFLICT (org_id) DO UPDATE SET bytes = knowledge_usage.bytes + EXCLUDED.bytes;`;
    const remove = `
        UPDATE knowledge_usage u SET bytes = u.bytes - r.bytes
          FROM (SELECT org_id, sum(${WEIGHT}) AS bytes FROM removed GROUP BY org_id) r
         WHERE u.org_id = r.org_id;`;
    const fn = async (name: string, body: string) =>
      q.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
    await fn('knowledge_usage_added', add);
    await fn('knowledge_usage_removed', remove);
    // An update (none of the API's, but a document could be mended by hand) is a removal and an addition.
    await fn('knowledge_usage_changed', remove + add);
    await q.query(`CREATE TRIGGER knowledge_usage_added AFTER INSERT ON knowledge_document
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_usage_added()`);
    await q.query(`CREATE TRIGGER knowledge_usage_removed AFTER DELETE ON knowledge_document
      REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_usage_removed()`);
    await q.query(`CREATE TRIGGER knowledge_usage_changed AFTER UPDATE ON knowledge_document
      REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_usage_changed()`);
    await q.query(`INSERT INTO knowledge_usage (org_id, bytes) SELECT org_id, sum(${WEIGHT}) FROM knowledge_document GROUP BY org_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER knowledge_usage_changed ON knowledge_document`);
    await q.query(`DROP TRIGGER knowledge_usage_removed ON knowledge_document`);
    await q.query(`DROP TRIGGER knowledge_usage_added ON knowledge_document`);
    await q.query(`DROP FUNCTION knowledge_usage_changed(), knowledge_usage_removed(), knowledge_usage_added()`);
    await q.query(`DROP TABLE knowledge_usage`);
  }
}
