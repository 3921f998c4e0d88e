import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A knowledge document weighs its search index too. KNOWLEDGE_MAX_BYTES_PER_ORG counted what a row
 * keeps of the caller's (text, title, metadata), and the generated `search` vector and its GIN
 * entries take about ten times that for text of short distinct words: ten documents of random
 * six-letter words counted 6.4 MB and took 58.6 MB of the volume, 57.7 bytes a word of their
 * vectors beside the text (attack round 14, N-F4). A document now also weighs 64 bytes for each
 * word of its vector, as a memory does (1764820000000): a count the row stores, so a document weighs
 * the same when it goes as when it came (the vector's stored size may be compressed one way and
 * not the other).
 *
 * The document table is locked against writes before the functions change and the totals are
 * summed again, so no document of a node still running is missed or counted twice. Summing reads
 * every document's vector once.
 */
export const KNOWLEDGE_WEIGHT_SQL = `octet_length(content) + octet_length(title) + coalesce(metadata_bytes, 0) + 64 * length(search)`;
const BEFORE = `octet_length(content) + octet_length(title) + coalesce(metadata_bytes, 0)`;

export class KnowledgeSearchWeight1764900000001 implements MigrationInterface {
  name = 'KnowledgeSearchWeight1764900000001';

  async up(q: QueryRunner): Promise<void> {
    await weigh(q, KNOWLEDGE_WEIGHT_SQL);
  }

  async down(q: QueryRunner): Promise<void> {
    await weigh(q, BEFORE);
  }
}

async function weigh(q: QueryRunner, weight: string): Promise<void> {
  await q.query(`LOCK TABLE knowledge_document IN SHARE ROW EXCLUSIVE MODE`);
  const add = `
    INSERT INTO knowledge_usage (org_id, bytes, documents)
      SELECT org_id, sum(${weight}), count(*) FROM added GROUP BY org_id
      ON CONFLICT (org_id) DO UPDATE SET bytes = knowledge_usage.bytes + EXCLUDED.bytes, documents = knowledge_usage.documents + EXCLUDED.documents;`;
  const remove = `
    UPDATE knowledge_usage u SET bytes = u.bytes - r.bytes, documents = u.documents - r.documents
      FROM (SELECT org_id, sum(${weight}) AS bytes, count(*) AS documents FROM removed GROUP BY org_id) r
     WHERE u.org_id = r.org_id;`;
  const fn = (name: string, body: string) =>
    q.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$`);
  await fn('knowledge_usage_added', add);
  await fn('knowledge_usage_removed', remove);
  // An update (none of the API's) is a removal and an addition.
  await fn('knowledge_usage_changed', remove + add);
  await q.query(`UPDATE knowledge_usage u SET bytes = coalesce((SELECT sum(${weight}) FROM knowledge_document d WHERE d.org_id = u.org_id), 0)`);
}
