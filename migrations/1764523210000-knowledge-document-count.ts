import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many knowledge documents each organization has, kept beside their bytes (knowledge_usage,
 * 1764522900000) by the same statement triggers, for KNOWLEDGE_MAX_DOCUMENTS_PER_ORG. The bytes
 * bound counts what a row keeps of the caller's: an empty document counted 3 bytes and took about
 * 540 on the volume, so the 1 GiB bound let an organization keep some 190 GB of them (attack
 * round 10, E-F2). Counting them per insert would scan the organization's documents under its lock.
 *
 * The document table is locked against writes before the functions change and the counts are
 * summed, so no document of a node still running is missed or counted twice.
 */
const WEIGHT = `octet_length(content) + octet_length(title) + coalesce(metadata_bytes, 0)`;

const ADD = `
    INSERT INTO knowledge_usage (org_id, bytes, documents)
      SELECT org_id, sum(${WEIGHT}), count(*) FROM added GROUP BY org_id
      ON CONFLICT (org_id) DO UPDATE SET bytes = knowledge_usage.bytes + EXCLUDED.bytes, documents = knowledge_usage.documents + EXCLUDED.documents;`;
const REMOVE = `
    UPDATE knowledge_usage u SET bytes = u.bytes - r.bytes, documents = u.documents - r.documents
      FROM (SELECT org_id, sum(${WEIGHT}) AS bytes, count(*) AS documents FROM removed GROUP BY org_id) r
     WHERE u.org_id = r.org_id;`;

export class KnowledgeDocumentCount1764523210000 implements MigrationInterface {
  name = 'KnowledgeDocumentCount1764523210000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE knowledge_document IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`ALTER TABLE knowledge_usage ADD COLUMN documents bigint NOT NULL DEFAULT 0 CHECK (documents >= 0)`);
    await replace(q, ADD, REMOVE);
    await q.query(
      `UPDATE knowledge_usage u SET documents = c.n FROM (SELECT org_id, count(*) AS n FROM knowledge_document GROUP BY org_id) c WHERE u.org_id = c.org_id`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE knowledge_document IN SHARE ROW EXCLUSIVE MODE`);
    const add = `
    INSERT INTO knowledge_usage (org_id, bytes)
      SELECT org_id, sum(${WEIGHT}) FROM added GROUP BY org_id
      ON CONFLICT (org_id) DO UPDATE SET bytes = knowledge_usage.bytes + EXCLUDED.bytes;`;
    const remove = `
    UPDATE knowledge_usage u SET bytes = u.bytes - r.bytes
      FROM (SELECT org_id, sum(${WEIGHT}) AS bytes FROM removed GROUP BY org_id) r
     WHERE u.org_id = r.org_id;`;
    await replace(q, add, remove);
    await q.query(`ALTER TABLE knowledge_usage DROP COLUMN documents`);
  }
}

async function replace(q: QueryRunner, add: string, remove: string): Promise<void> {
  const fn = (name: string, body: string) =>
    q.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
  await fn('knowledge_usage_added', add);
  await fn('knowledge_usage_removed', remove);
  // An update (none of the API's) is a removal and an addition.
  await fn('knowledge_usage_changed', remove + add);
}
