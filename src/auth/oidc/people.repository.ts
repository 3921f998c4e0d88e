import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { LruCache } from '../../common/lru-cache';

/** People a node remembers having recorded: a person's requests after the first write nothing. */
const REMEMBERED = 10_000;

/**
 * Records that a person of an organization signed in, so that the UUID records hold for them
 * (derived from the issuer and subject) can be shown as the subject (`GET /principals`).
 */
@Injectable()
export class PeopleRepository {
  private readonly recorded = new LruCache<string, true>(REMEMBERED);

  constructor(private readonly dataSource: DataSource) {}

  async seen(orgId: string, id: string, subject: string): Promise<void> {
    const key = `${orgId}:${id}`;
    if (this.recorded.get(key)) return;
    await this.dataSource.query(`INSERT INTO person (org_id, id, subject) VALUES ($1, $2, $3) ON CONFLICT (org_id, id) DO NOTHING`, [orgId, id, subject]);
    this.recorded.set(key, true);
  }
}
