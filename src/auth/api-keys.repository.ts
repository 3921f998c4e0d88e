import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Page, PageQuery } from '../common/pagination';
import { newestFirstPage } from '../database/keyset-page';
import type { Role } from './principal';

/** A key as its organization's admins see it (never its token or hash). */
export interface ApiKeyRow {
  id: string;
  name: string;
  roles: Role[];
  token_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** What authentication needs: the key and its organization's scopes, read in one query. */
export interface ActiveKeyRow {
  id: string;
  org_id: string;
  roles: Role[];
  token_hash: string;
  scopes: string[];
}

/**
 * The owner of `api_key`. Writes take the organization first and, when they are part of a larger
 * change (an audit event beside them), the transaction's manager.
 */
@Injectable()
export class ApiKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The unrevoked key with this token digest, with its organization's scopes. Not tenant-scoped: this is how the tenant is learned. */
  async findActiveByDigest(digestHex: string): Promise<ActiveKeyRow | undefined> {
    const rows: ActiveKeyRow[] = await this.dataSource.query(
      `SELECT k.id, k.org_id, k.roles, k.token_hash, o.scopes
         FROM api_key k JOIN org o ON o.id = k.org_id
        WHERE k.token_hash = $1 AND k.revoked_at IS NULL`,
      [digestHex],
    );
    return rows[0];
  }

  async insert(orgId: string, key: { id: string; name: string; roles: Role[]; tokenPrefix: string; tokenHash: string }, m: EntityManager): Promise<ApiKeyRow> {
    const [row]: ApiKeyRow[] = await m.query(
      `INSERT INTO api_key (id, org_id, name, roles, token_prefix, token_hash) VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING id, name, roles, token_prefix, created_at, revoked_at`,
      [key.id, orgId, key.name, key.roles, key.tokenPrefix, key.tokenHash],
    );
    return row;
  }

  list<T>(orgId: string, query: PageQuery, view: (row: ApiKeyRow) => T): Promise<Page<T>> {
    return newestFirstPage(
      this.dataSource,
      { select: 'SELECT id, name, roles, token_prefix, created_at, revoked_at FROM api_key', where: 'org_id = $1', params: [orgId] },
      query,
      view,
    );
  }

  /** `revoked`: this call revoked it; `already`: it was revoked before; `missing`: no such key here. */
  async revoke(orgId: string, keyId: string, m: EntityManager): Promise<'revoked' | 'already' | 'missing'> {
    const [rows]: [{ id: string }[], number] = await m.query(
      `UPDATE api_key SET revoked_at = now() WHERE id = $1 AND org_id = $2 AND revoked_at IS NULL RETURNING id`,
      [keyId, orgId],
    );
    if (rows.length > 0) return 'revoked';
    const known: unknown[] = await m.query(`SELECT 1 FROM api_key WHERE id = $1 AND org_id = $2`, [keyId, orgId]);
    return known.length > 0 ? 'already' : 'missing';
  }

  /** The unrevoked key with this id, with its organization's scopes as they are now (a run acting for the key that started it). */
  async findActiveById(orgId: string, keyId: string): Promise<Omit<ActiveKeyRow, 'token_hash'> | undefined> {
    const rows: Omit<ActiveKeyRow, 'token_hash'>[] = await this.dataSource.query(
      `SELECT k.id, k.org_id, k.roles, o.scopes FROM api_key k JOIN org o ON o.id = k.org_id
        WHERE k.org_id = $1 AND k.id = $2 AND k.revoked_at IS NULL`,
      [orgId, keyId],
    );
    return rows[0];
  }
}
