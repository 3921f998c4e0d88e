import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Page, PageQuery } from '../common/pagination';
import { newestFirstPage } from '../database/keyset-page';

export interface ModelProviderRow {
  id: string;
  org_id: string;
  name: string;
  kind: 'openai-compatible';
  base_url: string;
  api_key_sealed: string | null;
  created_at: Date;
}

/**
 * Whether the organization has this provider; with `lock`, held (FOR KEY SHARE) until the
 * transaction of `db` ends, so a delete waits for the publish that names it. A function, not a
 * method, because publish asks it inside its own transaction from the agents module.
 */
export async function modelProviderExists(db: Pick<DataSource, 'query'>, orgId: string, providerId: string, lock = false): Promise<boolean> {
  const rows: unknown[] = await db.query(`SELECT 1 FROM model_provider WHERE org_id = $1 AND id = $2 ${lock ? 'FOR KEY SHARE' : ''}`, [orgId, providerId]);
  return rows.length > 0;
}

/** The owner of `model_provider`. Every method takes the organization first. */
@Injectable()
export class ModelProvidersRepository {
  constructor(readonly dataSource: DataSource) {}

  async insert(
    orgId: string,
    p: { id: string; name: string; kind: string; baseUrl: string; apiKeySealed: string | null },
    m: EntityManager,
  ): Promise<ModelProviderRow> {
    const [created]: ModelProviderRow[] = await m.query(
      `INSERT INTO model_provider (id, org_id, name, kind, base_url, api_key_sealed) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [p.id, orgId, p.name, p.kind, p.baseUrl, p.apiKeySealed],
    );
    return created;
  }

  page<T>(orgId: string, query: PageQuery, map: (r: ModelProviderRow) => T): Promise<Page<T>> {
    return newestFirstPage(this.dataSource, { select: 'SELECT * FROM model_provider', where: 'org_id = $1', params: [orgId] }, query, map);
  }

  async find(orgId: string, id: string): Promise<ModelProviderRow | undefined> {
    const rows: ModelProviderRow[] = await this.dataSource.query(`SELECT * FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return rows[0];
  }

  exists(orgId: string, id: string): Promise<boolean> {
    return modelProviderExists(this.dataSource, orgId, id);
  }

  /** The row, locked for the rest of `m`'s transaction: FOR UPDATE waits for a publish holding it (FOR KEY SHARE). */
  async lock(orgId: string, id: string, m: EntityManager): Promise<ModelProviderRow | undefined> {
    const [row]: ModelProviderRow[] = await m.query(`SELECT * FROM model_provider WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
    return row;
  }

  /**
   * A published version that runs on the provider, if any. It reads `agent_version` (owned by the
   * version store) only to refuse a delete, inside the transaction that holds the provider's lock.
   */
  async firstBoundVersion(orgId: string, id: string, m: EntityManager): Promise<{ agent_id: string; version: number } | undefined> {
    const bound: { agent_id: string; version: number }[] = await m.query(
      `SELECT agent_id, version FROM agent_version WHERE org_id = $1 AND spec ? 'model' AND spec->'model'->>'provider' = $2 LIMIT 1`,
      [orgId, id],
    );
    return bound[0];
  }

  /** Replaces the sealed key (null: none); undefined when the organization has no such provider. */
  async setApiKey(orgId: string, id: string, apiKeySealed: string | null, m: EntityManager): Promise<ModelProviderRow | undefined> {
    const [rows]: [ModelProviderRow[], number] = await m.query(`UPDATE model_provider SET api_key_sealed = $3 WHERE org_id = $1 AND id = $2 RETURNING *`, [
      orgId,
      id,
      apiKeySealed,
    ]);
    return rows[0];
  }

  async delete(orgId: string, id: string, m: EntityManager): Promise<void> {
    await m.query(`DELETE FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, id]);
  }
}
