import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import { ApiKeyExpiriesRepository, DueRow } from './api-key-expiries.repository';

/** Keys one statement claims; a sweep takes batches while they come back full, up to EXPIRY_MAX_BATCHES. */
export const EXPIRY_BATCH = 500;
export const EXPIRY_MAX_BATCHES = 40;
const DEFAULT_NOTICE_MS = 7 * 86_400_000;

export interface ExpiryReport {
  expiring: number;
  expired: number;
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
 * Several nodes sweeping at once say each thing once (ApiKeyExpiriesRepository).
 */
@Injectable()
export class ApiKeyExpiryEvents extends IntervalSweeper<ExpiryReport> {
  protected readonly logger = new Logger(ApiKeyExpiryEvents.name);
  protected readonly what = 'telling organizations of expiring API keys';

  constructor(
    private readonly repo: ApiKeyExpiriesRepository,
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

  /** One batch (see ApiKeyExpiriesRepository.tellDue); tests call it to stand for a node's sweep. */
  tellDue(batch: number): Promise<DueRow[]> {
    return this.repo.tellDue(this.config.apiKeyExpiryNoticeMs ?? DEFAULT_NOTICE_MS, batch);
  }
}
