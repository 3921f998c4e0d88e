import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Role } from './principal';

const ACTOR = { type: 'system', id: 'api-key-expiry' } as const;

/** A key whose expiry the organization was just told of. */
export interface DueRow {
  id: string;
  org_id: string;
  name: string;
  roles: Role[];
  expires_at: Date;
  expired: boolean;
}

/**
 * The claims behind `api_key.expiring` and `api_key.expired` (ApiKeyExpiryEvents): each key's
 * notice and expiry are marked by a conditional update that commits with its event, so nodes
 * sweeping at once say each thing once; `FOR UPDATE SKIP LOCKED` keeps them off each other's rows.
 */
@Injectable()
export class ApiKeyExpiriesRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /** One batch: the keys claimed and their events commit together, or neither does. */
  async tellDue(noticeMs: number, batch: number): Promise<DueRow[]> {
    return this.dataSource.transaction(async (m) => {
      // statement_timestamp(), as the key's own check (src/database/live-key.ts): a key is told
      // it expired only once requests with it are refused, never while one is still accepted.
      const [rows]: [DueRow[], number] = await m.query(
        `UPDATE api_key k
            SET expiry_recorded_at = CASE WHEN k.expires_at <= statement_timestamp() THEN statement_timestamp() END,
                expiry_noticed_at = CASE WHEN k.expires_at > statement_timestamp() THEN statement_timestamp() ELSE k.expiry_noticed_at END
          WHERE k.id IN (
                SELECT id FROM api_key
                 WHERE expires_at IS NOT NULL AND revoked_at IS NULL AND expiry_recorded_at IS NULL
                   AND expires_at <= statement_timestamp() + $1::float8 * interval '1 millisecond'
                   AND (expires_at <= statement_timestamp()
                        OR (expiry_noticed_at IS NULL AND created_at < expires_at - $1::float8 * interval '1 millisecond'))
                 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            AND k.revoked_at IS NULL AND k.expiry_recorded_at IS NULL
          RETURNING k.id, k.org_id, k.name, k.roles, k.expires_at, k.expiry_recorded_at IS NOT NULL AS expired`,
        [noticeMs, batch],
      );
      await this.audit.record(
        m,
        ...rows.map((r) => ({
          type: r.expired ? ('api_key.expired' as const) : ('api_key.expiring' as const),
          orgId: r.org_id,
          actor: ACTOR,
          target: { type: 'api_key', id: r.id },
          data: { name: r.name, roles: r.roles, expiresAt: r.expires_at.toISOString() },
        })),
      );
      return rows;
    });
  }
}
