import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

export interface OrgRow {
  id: string;
  slug: string;
  name: string;
  scopes: string[];
  created_at: Date;
}

/**
 * The owner of `org`. The organization is the tenant itself, so its id comes first like every
 * other repository's tenant; writes that carry an audit event take the transaction's manager.
 */
@Injectable()
export class OrgsRepository {
  constructor(readonly dataSource: DataSource) {}

  async insert(org: { id: string; slug: string; name: string; scopes: string[] }, m: EntityManager): Promise<OrgRow> {
    const [row]: OrgRow[] = await m.query(`INSERT INTO org (id, slug, name, scopes) VALUES ($1, $2, $3, $4) RETURNING *`, [
      org.id,
      org.slug,
      org.name,
      org.scopes,
    ]);
    return row;
  }

  /** Ordered by slug, after `afterSlug` when given (the platform admin's list). */
  async listBySlug(afterSlug: string | undefined, limit: number): Promise<OrgRow[]> {
    return afterSlug !== undefined
      ? this.dataSource.query(`SELECT * FROM org WHERE slug > $1 ORDER BY slug LIMIT $2`, [afterSlug, limit])
      : this.dataSource.query(`SELECT * FROM org ORDER BY slug LIMIT $1`, [limit]);
  }

  async find(orgId: string): Promise<OrgRow | undefined> {
    const [row]: OrgRow[] = await this.dataSource.query(`SELECT * FROM org WHERE id = $1`, [orgId]);
    return row;
  }

  async exists(orgId: string, m: Pick<DataSource, 'query'> = this.dataSource): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT 1 FROM org WHERE id = $1`, [orgId]);
    return rows.length > 0;
  }

  /** The scopes, locked for the rest of `m`'s transaction. */
  async lockScopes(orgId: string, m: EntityManager): Promise<string[] | undefined> {
    const rows: { scopes: string[] }[] = await m.query(`SELECT scopes FROM org WHERE id = $1 FOR UPDATE`, [orgId]);
    return rows[0]?.scopes;
  }

  /** The longest a new key of the organization may live, in days (null: no bound); undefined: no such organization. `hold`: locked to the end of `m`'s transaction, against a change of it. */
  async keyPolicy(orgId: string, m: Pick<DataSource, 'query'> = this.dataSource, hold = false): Promise<{ maxLifetimeDays: number | null } | undefined> {
    const rows: { days: number | null }[] = await m.query(`SELECT api_key_max_lifetime_days AS days FROM org WHERE id = $1${hold ? ' FOR SHARE' : ''}`, [
      orgId,
    ]);
    return rows[0] && { maxLifetimeDays: rows[0].days };
  }

  /** Which of these ids name agents of the organization (a key pinned to agents names only its own). */
  async agentsAmong(orgId: string, ids: string[], m: Pick<DataSource, 'query'>): Promise<string[]> {
    const rows: { id: string }[] = await m.query(`SELECT id FROM agent WHERE org_id = $1 AND id = ANY ($2::uuid[])`, [orgId, ids]);
    return rows.map((r) => r.id);
  }

  /** Sets it, answering the one it replaced (undefined: no such organization). */
  async setKeyPolicy(orgId: string, days: number | null, m: EntityManager): Promise<{ previous: number | null } | undefined> {
    const [row]: { previous: number | null }[] = await m.query(`SELECT api_key_max_lifetime_days AS previous FROM org WHERE id = $1 FOR UPDATE`, [orgId]);
    if (!row) return undefined;
    await m.query(`UPDATE org SET api_key_max_lifetime_days = $2 WHERE id = $1`, [orgId, days]);
    return row;
  }

  async setScopes(orgId: string, scopes: string[], m: EntityManager): Promise<OrgRow> {
    const [rows]: [OrgRow[], number] = await m.query(`UPDATE org SET scopes = $2 WHERE id = $1 RETURNING *`, [orgId, scopes]);
    return rows[0];
  }
}
