import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A document's length in characters, measured once, when it is written. A list of documents
 * answers each one's `contentLength`, and `length(content)` has to read and decompress the whole
 * text (a character count is not in the value's header, as its bytes are): a page of 200 documents
 * of a megabyte read 200 MB of the database for 38 KB of answer, 0.5 to 0.8 s a page, and one viewer
 * key's ten pages at once took another organization's `GET /agents` from p50 11 ms to 516 ms
 * (attack round 14, N-F1). Adding a stored column rewrites the table once.
 */
export class DocumentContentChars1764700000000 implements MigrationInterface {
  name = 'DocumentContentChars1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE knowledge_document ADD COLUMN content_chars integer GENERATED ALWAYS AS (length(content)) STORED`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE knowledge_document DROP COLUMN content_chars`);
  }
}
