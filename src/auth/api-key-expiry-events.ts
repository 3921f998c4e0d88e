import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import type { Role } from './principal';

/** Keys one statement claims; a sweep takes batches while they come back full, up to EXPIRY_MAX_BATCHES. */
export const EXPIRY_BATCH = 500;
export const EXPIRY_MAX_BATCHES = 40;
const DEFAULT_NOTICE_MS = 7 * 86_400_000;
const ACTOR = { type: 'system', id: 'api-key-expiry' } as const;

export interface ExpiryReport {
  expiring: number;
  expired: number;
}

interface DueRow {
  id: string;
  org_id: string;
  name: string;
  roles: Role[];
  expires_at: Date;
  expired: boolean;
}

/**
 * Tells an organization, through its audit log (and so its event streams and webhooks), that one
 * of its keys is about to stop working and, later, that it has. An expiry is otherwise silent:
 * the integration holding the key finds out from its first `401`, in production, at whatever
 * hour the date falls on.
 *
 * `api_key.expiring` is said once, API_KEY_EXPIRY_NOTICE_DAYS before `expiresAt`, and only for a
 * key made to live longer than that (a key made for an hour was made knowing it); `api_key.expired`
 * once, within a sweep of the instant. A revoked key is told nothing more: someone stopped it.
 * Each row is claimed by a conditional update that commits with its event, so several nodes
 * sweeping at once say each thing once; `FOR UPDATE SKIP LOCKED` keeps them off each other's rows.
 */
@Injectable()
export class ApiKeyExpiryEvents extends IntervalSweeper<ExpiryReport> {
  protected readonly logger = new Logger(ApiKeyExpiryEvents.name);
  protected readonly what = 'telling organizations of expiring API keys';

  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected async sweep(): Promise<ExpiryReport> {
    const report: ExpiryReport = { expiring: 0, expired: 0 };
    for (let i = 0; i < EXPIRY_MAX_BATCHES && !this.stopped; i++) {
      const told = await this.tellDue(EXPIRY_BATCH);
      for (const row of told) report[row.expired ? 'expired' : 'expiring']++;
      if (told.length < EXPIRY_BATCH) break;
    }
    if (report.expiring || report.expired) this.logger.log(report, 'told organizations of API key expiries');
    return report;
  }

  /** One batch: the keys claimed and their events commit together, or neither does. */
  async tellDue(batch: number): Promise<DueRow[]> {
    const noticeMs = this.config.apiKeyExpiryNoticeMs ?? DEFAULT_NOTICE_MS;
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
