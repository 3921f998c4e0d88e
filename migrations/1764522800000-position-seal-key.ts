import { randomBytes } from 'node:crypto';
import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The deployment's secret for sealing stream positions and the audit cursor
 * (src/secrets/position-seals.ts). Those positions are counters every organization shares, so in
 * the clear the gap between two of one organization's events counted what all the others wrote.
 * The secret lives in the database, not in SECRETS_KEY: every node reads the same one, and rotating
 * SECRETS_KEY must not turn every id a client holds into a 400. Drawn here, by Node, because the
 * embedded database has no pgcrypto.
 */
export class PositionSealKey1764522800000 implements MigrationInterface {
  name = 'PositionSealKey1764522800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE position_seal_key (
      id smallint PRIMARY KEY CHECK (id = 1),
      key bytea NOT NULL CHECK (octet_length(key) = 32)
    )`);
    await q.query(`INSERT INTO position_seal_key (id, key) VALUES (1, $1)`, [randomBytes(32)]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE position_seal_key`);
  }
}
