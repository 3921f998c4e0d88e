import { Inject, Injectable, Logger } from '@nestjs/common';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { Metrics } from '../telemetry/metrics';
import { IntervalSweeper } from './interval-sweeper';
import { BACKLOG_ACTOR, DROP_COUNT_BATCH, resumeAt } from './webhook-backlog';
import { BacklogCandidate, CountPosition, WebhookBacklogRepository } from './webhook-backlog.repository';

export interface BacklogReport {
  /** Endpoints this pass marked (their new events are no longer written as deliveries). */
  marked: string[];
  /** Endpoints this pass cleared. */
  cleared: string[];
  /** Events left out by marks, counted by this pass. */
  dropped: number;
}

/**
 * Bounds each endpoint's pending deliveries to WEBHOOK_MAX_PENDING_PER_ENDPOINT: deliveries finish
 * only as fast as the dispatcher attempts them (4 in flight per organization per node, 10 s an
 * attempt to a receiver that hangs), so an organization writing faster than that grew pending
 * rows without limit, which retention never removes. Every SWEEP_INTERVAL_SECONDS each node marks
 * the endpoints at their cap (the outbox then writes them nothing) and clears the marks of those
 * drained to half, each decision one statement with its audit event, and counts the events the
 * marks left out. Nodes sweeping at once decide once (the loser's statement finds the row
 * changed) and count each event once (a count moves its position by compare and set).
 *
 * Marking from the sweep, not on the write: counting an endpoint's pending deliveries on every
 * event, in the caller's transaction, is the cost the hot path must not pay. The price is a
 * sweep interval of overshoot past the cap (docs/operations.md).
 */
@Injectable()
export class WebhookBacklogSweeper extends IntervalSweeper<BacklogReport> {
  protected readonly logger = new Logger(WebhookBacklogSweeper.name);
  protected readonly what = 'bounding webhook backlogs';

  constructor(
    private readonly repo: WebhookBacklogRepository,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected async sweep(): Promise<BacklogReport> {
    const report: BacklogReport = { marked: [], cleared: [], dropped: 0 };
    const max = this.config.webhookMaxPendingPerEndpoint;
    const resume = resumeAt(max);
    // One short statement per endpoint, never one long one: a long statement's transaction would
    // hold back the horizon every event stream waits for.
    for (const c of await this.repo.candidates()) {
      if (this.stopped) return report;
      if (!c.backlogged) {
        const event = this.event(c, 'webhook.backlogged', { maxPending: max, resumesAt: resume });
        if (!(await this.repo.markIfFull(c, max, event))) continue;
        this.audit.committed([event]);
        report.marked.push(c.id);
        this.logger.warn(
          `webhook ${c.id} (organization ${c.orgId}) has ${max} or more deliveries pending: its new events are not written as deliveries ` +
            `until ${resume} remain (WEBHOOK_MAX_PENDING_PER_ENDPOINT); they stay in the audit log`,
        );
      } else {
        const event = this.event(c, 'webhook.backlog_cleared', { maxPending: max });
        if (!(await this.repo.clearIfDrained(c, resume, event))) continue;
        this.audit.committed([event]);
        report.cleared.push(c.id);
        this.logger.log(`webhook ${c.id} (organization ${c.orgId}) is down to ${resume} pending deliveries or fewer: its new events are written again`);
      }
    }
    for (const c of await this.repo.counting()) {
      if (this.stopped) return report;
      let at: CountPosition | null = c.at;
      if (!c.backlogged && at.until === null) {
        // This read saw the mark cleared, so the next statement can set the count's end (closeCount).
        const until = await this.repo.closeCount(c);
        if (until === undefined) continue;
        at = { ...at, until };
      }
      while (at && !this.stopped) {
        const counted = await this.repo.countDrops(c, at, DROP_COUNT_BATCH);
        // Another node moved this count on: it goes on from there, at its next sweep or ours.
        if (!counted) break;
        report.dropped += counted.dropped;
        this.metrics.webhookDeliveriesDropped(counted.dropped);
        at = counted.scanned === DROP_COUNT_BATCH ? counted.next : null;
      }
    }
    return report;
  }

  private event(c: BacklogCandidate, type: 'webhook.backlogged' | 'webhook.backlog_cleared', data: Record<string, unknown>): AuditEventInput {
    return { type, orgId: c.orgId, actor: BACKLOG_ACTOR, target: { type: 'webhook', id: c.id }, data: { url: c.url, ...data } };
  }
}
