import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { COUNT_LIVE_KEYS } from '../database/live-key';

export interface UsageRow {
  knowledge: string;
  collections: number;
  documents: string;
  agents: string;
  runs: string;
  skills: number;
  api_keys: number;
  memories: string;
}

/** What an organization holds of each bounded kind, as its bound counts it (the totals the database keeps, and counts). */
@Injectable()
export class UsageRepository {
  constructor(private readonly dataSource: DataSource) {}

  async of(orgId: string): Promise<UsageRow> {
    const [row]: UsageRow[] = await this.dataSource.query(
      `SELECT coalesce((SELECT bytes FROM knowledge_usage WHERE org_id = $1), 0)::text AS knowledge,
              (SELECT count(*) FROM knowledge_collection WHERE org_id = $1)::int AS collections,
              coalesce((SELECT documents FROM knowledge_usage WHERE org_id = $1), 0)::text AS documents,
              coalesce((SELECT bytes FROM agent_usage WHERE org_id = $1), 0)::text AS agents,
              (SELECT coalesce(sum(bytes), 0) FROM run_usage WHERE org_id = $1)::text AS runs,
              (SELECT count(*) FROM skill WHERE org_id = $1)::int AS skills,
              (${COUNT_LIVE_KEYS})::int AS api_keys,
              coalesce((SELECT bytes FROM memory_usage WHERE org_id = $1), 0)::text AS memories`,
      [orgId],
    );
    return row;
  }
}
