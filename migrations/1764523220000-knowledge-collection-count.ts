import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many documents each knowledge collection holds, kept on its row by statement triggers. Every
 * read of a collection (its list page, one collection, an agent's collections resolved for its
 * tools) counted them with `count(*)`: at an organization's million documents a page of collections
 * took 100 ms of the database, and ten pages asked for at once by one viewer key held the pool, so
 * another organization's reads went from 5 ms to 286 ms (attack round 10, E-F3).
 *
 * A document's insert and deletion already update their collection's row (`updated_at`), so the
 * count adds no lock the writes did not take. The document table is locked against writes while
 * the triggers are made and the counts summed, so nothing is missed or counted twice.
 */
export class KnowledgeCollectionCount1764523220000 implements MigrationInterface {
  name = 'KnowledgeCollectionCount1764523220000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE knowledge_document IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`ALTER TABLE knowledge_collection ADD COLUMN document_count bigint NOT NULL DEFAULT 0 CHECK (document_count >= 0)`);
    const change = (table: string, sign: '+' | '-') => `
        UPDATE knowledge_collection c SET document_count = c.document_count ${sign} t.n
          FROM (SELECT org_id, collection_id, count(*) AS n FROM ${table} GROUP BY org_id, collection_id) t
         WHERE c.org_id = t.org_id AND c.id = t.collection_id;`;
    const fn = (name: string, body: string) => q.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
    await fn('knowledge_collection_count_added', change('added', '+'));
    // A cascaded deletion of a collection finds its row gone already: nothing to count down.
    await fn('knowledge_collection_count_removed', change('removed', '-'));
    // An update (none of the API's; a document moved by hand) is a removal and an addition.
    await fn('knowledge_collection_count_changed', change('removed', '-') + change('added', '+'));
    await q.query(`CREATE TRIGGER knowledge_collection_count_added AFTER INSERT ON knowledge_document
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_collection_count_added()`);
    await q.query(`CREATE TRIGGER knowledge_collection_count_removed AFTER DELETE ON knowledge_document
      REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_collection_count_removed()`);
    await q.query(`CREATE TRIGGER knowledge_collection_count_changed AFTER UPDATE ON knowledge_document
      REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_collection_count_changed()`);
    await q.query(`UPDATE knowledge_collection c SET document_count = d.n
      FROM (SELECT org_id, collection_id, count(*) AS n FROM knowledge_document GROUP BY org_id, collection_id) d
     WHERE c.org_id = d.org_id AND c.id = d.collection_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER knowledge_collection_count_changed ON knowledge_document`);
    await q.query(`DROP TRIGGER knowledge_collection_count_removed ON knowledge_document`);
    await q.query(`DROP TRIGGER knowledge_collection_count_added ON knowledge_document`);
    await q.query(`DROP FUNCTION knowledge_collection_count_changed(), knowledge_collection_count_removed(), knowledge_collection_count_added()`);
    await q.query(`ALTER TABLE knowledge_collection DROP COLUMN document_count`);
  }
}
