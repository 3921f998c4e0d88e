import { Module } from '@nestjs/common';
import { AuditRetentionSweeper } from '../audit/audit-retention.service';
import { EventLogRepository } from './event-log.repository';
import { EventStreamService } from './event-stream.service';
import { EventWakeups } from './event-wakeups.service';
import { EventsController } from './events.controller';
import { WebhookBacklogRepository } from './webhook-backlog.repository';
import { WebhookBacklogSweeper } from './webhook-backlog.service';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import { WebhookRetentionSweeper } from './webhook-retention.service';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** The audit log read as events: the live stream (GET /events) and webhooks (the outbox and its dispatcher). */
@Module({
  controllers: [EventsController, WebhooksController],
  providers: [
    EventLogRepository,
    EventWakeups,
    EventStreamService,
    WebhooksRepository,
    WebhookDeliveriesRepository,
    WebhooksService,
    WebhookDispatcher,
    WebhookRetentionSweeper,
    // Beside the delivery log's: the deliveries it keeps name the events this one removes (AUDIT_RETENTION_DAYS).
    AuditRetentionSweeper,
    WebhookBacklogRepository,
    WebhookBacklogSweeper,
  ],
  exports: [EventWakeups, EventLogRepository],
})
export class EventsModule {}
