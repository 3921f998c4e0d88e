import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** The owner of `position_seal_key`: one row, drawn by its migration, only ever read. */
@Injectable()
export class PositionSealKeyRepository {
  constructor(private readonly dataSource: DataSource) {}

  async read(): Promise<Buffer | undefined> {
    const rows: { key: Uint8Array }[] = await this.dataSource.query(`SELECT key FROM position_seal_key WHERE id = 1`);
    return rows.length === 1 ? Buffer.from(rows[0].key) : undefined;
  }
}
