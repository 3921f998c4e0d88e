import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { toInt } from './env-transforms';
import { RunsVariables } from './runs-config';

/** How webhooks are delivered, retried and kept. */
export class EventsVariables extends RunsVariables {
  /** How long one webhook request may take, connection included. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS: number = 10_000;

  /** The wait before the second attempt; each later wait is three times the one before (at most an hour), with jitter. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS: number = 5_000;

  /** How long a delivery is retried before it is `failed`. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(30 * 86400)
  WEBHOOK_RETRY_WINDOW_SECONDS: number = 86_400;

  /**
   * How long a finished delivery (`succeeded`, `failed`) and its attempts are kept, from when it
   * finished; pending ones are kept until they finish. A week: the log is for finding out why a
   * receiver refused what it did, over a weekend too; the events stay in the audit log.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(365)
  WEBHOOK_DELIVERY_RETENTION_DAYS: number = 7;

  /**
   * How long an audit event is kept, in days; 0 (the default): for good, the log append-only. Set,
   * each node's sweep removes the events older, so the log an organization writes at its rate limit
   * is bounded in time (attack round 19, Z-N1). At least the webhook delivery log's retention and
   * its retry window together, so every delivery listed still has its event.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  AUDIT_RETENTION_DAYS: number = 0;

  /**
   * Pending deliveries one endpoint may have. At it, its organization's new events are not written
   * as deliveries for it (counted, shown on the endpoint, audited) until half have drained: a
   * receiver that hangs or is slow no longer grows the table without limit (~450 bytes a delivery).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(10_000_000)
  WEBHOOK_MAX_PENDING_PER_ENDPOINT: number = 10_000;
}

export interface EventsConfig {
  /** A comment on every open event stream this often (API.md: 15 s). */
  heartbeatMs: number;
  /** How often a stream and the webhook dispatcher look for events nobody woke them for. */
  pollMs: number;
  webhookTimeoutMs: number;
  webhookRetryBaseMs: number;
  webhookRetryWindowMs: number;
}
