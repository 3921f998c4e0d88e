import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A word of a search index weighs its bytes too. Migrations 1764820000000 and 1764900000001 weighed
 * each word of a memory's or a document's search vector 64 bytes, what a short word takes; but a
 * word is kept up to 2,047 bytes, once in the vector and once as its GIN key (whose pages hold
 * three such keys, in leaves and inner pages alike), so a word of 1,984 bytes took about 6.3 KB
 * beside its text and counted 64. Measured on PostgreSQL 15: 100,000 memories of one such word
 * counted 256 MB and took 835 MB; 40 documents of 500 such words counted 41 MB and took 172 MB
 * (attack round 21, AC-F1). A word now weighs 64 bytes and three times its own bytes (the vector,
 * the key, the pages' room), read from the row's vector, so it weighs the same going as coming.
 *
 * A word's bytes are summed from the vector without its positions (`strip`, a value made anew, never
 * compressed): 8 bytes of header, 4 a word, then the words' bytes. Unnesting the words into an array
 * took 31 ms for a vector of 100,000 words, this 2 ms (a deleted collection's documents are weighed
 * so, one by one).
 *
 * Both tables are locked against writes before the weights change and the totals are summed
 * again, so no row of a node still running is missed or counted twice.
 */
/** The weights before this migration (1764820000000 and 1764900000001), written again by `down`. */
const MEMORY_WEIGHT_SQL = `512 + octet_length(content) + octet_length(agent_memory_tags_text(tags)) + 64 * length(search)`;
const KNOWLEDGE_WEIGHT_SQL = `octet_length(content) + octet_length(title) + coalesce(metadata_bytes, 0) + 64 * length(search)`;
export const WORD_BYTES_SQL = `3 * search_word_bytes(search)`;
const MEMORY_WEIGHT = `${MEMORY_WEIGHT_SQL} + ${WORD_BYTES_SQL}`;
const KNOWLEDGE_WEIGHT = `${KNOWLEDGE_WEIGHT_SQL} + ${WORD_BYTES_SQL}`;

export class SearchWordBytes1765100000000 implements MigrationInterface {
  name = 'SearchWordBytes1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION search_word_bytes(search tsvector) RETURNS bigint
      LANGUAGE sql IMMUTABLE PARALLEL SAFE
      RETURN pg_column_size(strip(search)) - 8 - 4 * length(search)`);
    await weighMemories(q, MEMORY_WEIGHT);
    await weighDocuments(q, KNOWLEDGE_WEIGHT);
  }

  async down(q: QueryRunner): Promise<void> {
    await weighDocuments(q, KNOWLEDGE_WEIGHT_SQL);
    await weighMemories(q, MEMORY_WEIGHT_SQL);
    await q.query(`DROP FUNCTION search_word_bytes(tsvector)`);
  }
}

/** agent_memory_weight is what the triggers and `remember` weigh a memory by: replaced, and the totals summed again. */
async function weighMemories(q: QueryRunner, weight: string): Promise<void> {
  await q.query(`LOCK TABLE agent_memory IN SHARE ROW EXCLUSIVE MODE`);
  await q.query(`CREATE OR REPLACE FUNCTION agent_memory_weight(content text, tags text[], search tsvector) RETURNS bigint
      LANGUAGE sql IMMUTABLE PARALLEL SAFE
      RETURN ${weight}`);
  await q.query(
    `UPDATE memory_usage u SET bytes = coalesce((SELECT sum(agent_memory_weight(content, tags, search)) FROM agent_memory m WHERE m.org_id = u.org_id), 0)`,
  );
}

/** The document triggers write their weight inline (1764900000001): written again with this one. */
async function weighDocuments(q: QueryRunner, weight: string): Promise<void> {
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
  await fn('knowledge_usage_changed', remove + add);
  await q.query(`UPDATE knowledge_usage u SET bytes = coalesce((SELECT sum(${weight}) FROM knowledge_document d WHERE d.org_id = u.org_id), 0)`);
}
