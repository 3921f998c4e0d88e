import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import { AuditRepository } from './audit.repository';

/** Events one statement removes: a few hundred bytes to 46 KB each (rows 199, 200), so a statement stays brief. */
export const AUDIT_RETENTION_BATCH = 1000;

/**
 * Keeps the audit log AUDIT_RETENTION_DAYS (off at 0, the default: kept for good). Every audited
 * action of every organization writes to it, at each key's rate limit, and nothing removed an event:
 * set, the log is bounded in time. Each node sweeps every SWEEP_INTERVAL_SECONDS, the oldest events
 * first, batch after batch; an event a little out of order (its transaction began earlier than one
 * written before it) goes at a later sweep.
 */
@Injectable()
export class AuditRetentionSweeper extends IntervalSweeper<number> {
  protected readonly logger = new Logger(AuditRetentionSweeper.name);
  protected readonly what = 'removing audit events past AUDIT_RETENTION_DAYS';

  constructor(
    private readonly repo: AuditRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected async sweep(): Promise<number> {
    const days = Math.floor((this.config.auditRetentionMs ?? 0) / 86_400_000);
    if (days < 1) return 0;
    const { removed } = await this.inBatches(AUDIT_RETENTION_BATCH, () => this.repo.deleteOlderThan(days, AUDIT_RETENTION_BATCH));
    if (removed) this.logger.log(`removed ${removed} audit events older than AUDIT_RETENTION_DAYS`);
    return removed;
  }
}
