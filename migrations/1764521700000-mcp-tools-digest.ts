import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A digest of each connection's stored tool list, which changes whenever the list does. A call
 * reads the connection without its list (up to 4 MiB) and takes the list, and the digests of its
 * tools, from what the node kept under that digest: reading, parsing and hashing the whole list
 * on every call of any of its tools let one agent key saturate a node. The backfill hashes the
 * stored text; the application hashes the text it stores (equal lists may differ in digest, which
 * costs one read, never a stale list).
 */
export class McpToolsDigest1764521700000 implements MigrationInterface {
  name = 'McpToolsDigest1764521700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection ADD COLUMN tools_digest text`);
    await q.query(`UPDATE mcp_connection SET tools_digest = encode(sha256(convert_to(tools::text, 'UTF8')), 'hex')`);
    await q.query(`ALTER TABLE mcp_connection ALTER COLUMN tools_digest SET NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection DROP COLUMN tools_digest`);
  }
}
