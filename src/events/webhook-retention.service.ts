import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from './interval-sweeper';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';

/**
 * Rows one statement removes. Small enough that each statement is brief (a node's pool and the
 * table's locks are free again within milliseconds), large enough to keep up: one organization's
 * 50 webhooks on every type finish up to 10,000 deliveries a second at its rate limit.
 */
export const RETENTION_BATCH = 1000;

export interface RetentionReport {
  deliveries: number;
  endpoints: number;
  /** Statements that removed deliveries (a backlog is removed a batch at a time). */
  batches: number;
}

/**
 * Keeps the webhook delivery log to WEBHOOK_DELIVERY_RETENTION_DAYS: without it every delivery
 * and attempt of every organization stayed for good (50 webhooks on every type: ~44 KB a request
 * against 1.5 KB of audit log). Each node sweeps every SWEEP_INTERVAL_SECONDS, batch after batch
 * until what is past the retention is gone; nodes sweeping at once skip each other's rows.
 */
@Injectable()
export class WebhookRetentionSweeper extends IntervalSweeper<RetentionReport> {
  protected readonly logger = new Logger(WebhookRetentionSweeper.name);
  protected readonly what = 'removing old webhook deliveries';

  constructor(
    private readonly repo: WebhookDeliveriesRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected async sweep(): Promise<RetentionReport> {
    const retentionMs = this.config.webhookDeliveryRetentionMs;
    const { removed, batches } = await this.inBatches(RETENTION_BATCH, () => this.repo.deleteFinished(retentionMs, RETENTION_BATCH));
    const report: RetentionReport = { deliveries: removed, endpoints: 0, batches };
    if (!this.stopped) report.endpoints = await this.repo.deleteForgottenEndpoints(retentionMs, RETENTION_BATCH);
    if (report.deliveries || report.endpoints) {
      this.logger.log(`removed ${report.deliveries} webhook deliveries and ${report.endpoints} deleted endpoints past the retention`);
    }
    return report;
  }
}
