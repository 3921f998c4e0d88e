import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PrincipalView } from './principals.dto';

/** Who an id names in an organization: one of its API keys, or a person who signed in (PeopleRepository). */
@Injectable()
export class PrincipalsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async named(orgId: string, ids: string[]): Promise<PrincipalView[]> {
    const rows: { id: string; type: 'api_key' | 'oidc'; name: string; revoked_at: Date | null; expires_at: Date | null }[] = await this.dataSource.query(
      `SELECT id, 'api_key' AS type, name, revoked_at, expires_at FROM api_key WHERE org_id = $1 AND id = ANY ($2::uuid[])
       UNION ALL
       SELECT id, 'oidc' AS type, subject AS name, NULL AS revoked_at, NULL AS expires_at FROM person WHERE org_id = $1 AND id = ANY ($2::uuid[])
       ORDER BY id`,
      [orgId, ids],
    );
    return rows.map((r) => ({
      id: r.id,
      type: r.type,
      name: r.name,
      ...(r.revoked_at ? { revokedAt: r.revoked_at.toISOString() } : {}),
      ...(r.expires_at ? { expiresAt: r.expires_at.toISOString() } : {}),
    }));
  }
}
