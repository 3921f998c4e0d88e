import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { ArrayUnique } from '../common/unique-list';
import { AUDIT_EVENT_TYPES } from '../audit/audit.service';
import { IsInstant } from '../common/instant';
import { PageQuery } from '../common/pagination';
import type { DeliveryAttempt, DeliveryStatus, RotatedSecret, WebhookBacklog, WebhookDelivery, WebhookEndpoint } from './webhooks.repository';

/** Every type, and `*` for all of them (also the types a later release adds). */
export const WEBHOOK_TYPES = ['*', ...AUDIT_EVENT_TYPES] as const;
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export class CreateWebhookDto {
  @ApiProperty({
    example: 'https://hooks.example.com/platform',
    maxLength: 2048,
    description:
      'Where deliveries are POSTed: `https:`, or `http:` to a host in EGRESS_ALLOWED_HOSTS; no user name or password in it. A token in its query (`?token=`) or path (`/services/T…/B…/<token>`) is kept sealed: answers and the audit log show every query value, and every path segment shaped like a token, as `[redacted]`.',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url: string;

  @ApiProperty({
    type: [String],
    example: ['approval.requested'],
    description: `Audit event types to deliver; \`*\` for every type. One or more of: ${WEBHOOK_TYPES.join(', ')}.`,
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_TYPES.length)
  @ArrayUnique()
  @IsIn(WEBHOOK_TYPES, { each: true, message: 'each of types must be an audit event type or *' })
  types: string[];

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;
}

export class WebhookBacklogView implements WebhookBacklog {
  @ApiProperty({
    description:
      'Pending deliveries (not yet succeeded or failed), counted up to twice `maxPending` at most a second before the answer. Stays near `maxPending` at most: an endpoint reaching it gets no new deliveries within a sweep interval.',
  })
  pending: number;
  @ApiProperty({ description: 'WEBHOOK_MAX_PENDING_PER_ENDPOINT: at this many pending deliveries, new events are not written as deliveries for the endpoint.' })
  maxPending: number;
  @ApiProperty({
    format: 'date-time',
    type: String,
    nullable: true,
    description:
      'Since when new events are not written as deliveries for this endpoint (it reached `maxPending`); null while they are. They are written again once half of `maxPending` or fewer are pending. Audited `webhook.backlogged` and `webhook.backlog_cleared`.',
  })
  droppingSince: string | null;
  @ApiProperty({
    description:
      'Events of its types not written as deliveries for it, in its latest time at the cap (0 if never), counted by the sweep: up to an interval behind. They stay in the audit log: read them with `GET /audit-events?since=` `firstDroppedAt` `&until=` `lastDroppedAt` plus a millisecond.',
  })
  dropped: number;
  @ApiProperty({ format: 'date-time', type: String, nullable: true, description: 'The `at` of the first event counted in `dropped`.' })
  firstDroppedAt: string | null;
  @ApiProperty({ format: 'date-time', type: String, nullable: true, description: 'The `at` of the last event counted in `dropped`.' })
  lastDroppedAt: string | null;
}

export class WebhookView implements WebhookEndpoint {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ description: 'The URL, its query values and token-shaped path segments shown as `[redacted]` (the URL itself is kept sealed).' }) url: string;
  @ApiProperty({ type: [String] }) types: string[];
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({
    format: 'date-time',
    type: String,
    nullable: true,
    description:
      'When its signing secret was last replaced (`rotate-secret`); null: never since it was created. What a rotation may be made conditional on (`ifSecretRotatedAt`).',
  })
  secretRotatedAt: string | null;
  @ApiProperty({ type: WebhookBacklogView, description: 'Its pending deliveries against the cap, and the events the cap kept from it.' })
  backlog: WebhookBacklogView;
}

export class CreatedWebhookView extends WebhookView {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret (Standard Webhooks `whsec_…`). Shown in this answer only: store it now.',
  })
  secret: string;
}

/** How long a replaced signing secret may be kept at most: a rotation is meant to end, not to keep two secrets valid for good. */
export const MAX_KEEP_PREVIOUS_SECONDS = 604_800;
export const DEFAULT_KEEP_PREVIOUS_SECONDS = 86_400;

export class RotateWebhookSecretDto {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: MAX_KEEP_PREVIOUS_SECONDS,
    default: DEFAULT_KEEP_PREVIOUS_SECONDS,
    description:
      'How long deliveries keep being signed with the secret replaced too (a second `v1,` signature), so receivers can switch without refusing one. 0: from now on only the new secret signs.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_KEEP_PREVIOUS_SECONDS)
  keepPreviousForSeconds?: number;

  @ApiPropertyOptional({
    format: 'date-time',
    type: String,
    nullable: true,
    maxLength: 64,
    description:
      "Rotate only if the secret was last replaced at this time (the endpoint's `secretRotatedAt`, to the millisecond; null: only if it never was). Otherwise `409 conflict` and nothing changes: another admin rotated it meanwhile, and theirs is the secret to keep. Absent: rotate whatever happened since.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsInstant()
  ifSecretRotatedAt?: string | null;
}

export class RotatedWebhookSecretView implements RotatedSecret {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The new signing secret (Standard Webhooks `whsec_…`). Shown in this answer only: store it now.',
  })
  secret: string;
  @ApiProperty({
    format: 'date-time',
    type: String,
    nullable: true,
    description: 'Until when deliveries also carry a signature under the secret replaced; null when they no longer do (`keepPreviousForSeconds: 0`).',
  })
  previousSecretExpiresAt: string | null;
  @ApiProperty({ format: 'date-time', description: "This rotation's time: the endpoint's `secretRotatedAt` from now on." })
  secretRotatedAt: string;
}

export class WebhookPage {
  @ApiProperty({ type: [WebhookView] }) items: WebhookView[];
  @ApiProperty({ type: String, nullable: true }) nextCursor: string | null;
}

export class DeliveryAttemptView implements DeliveryAttempt {
  @ApiProperty() attempt: number;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty({
    format: 'date-time',
    type: String,
    nullable: true,
    description: 'null while the attempt is in flight, or when its node stopped before it ended.',
  })
  finishedAt: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'The HTTP status the receiver answered.' }) status: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the attempt failed: a status, a timeout, a refused or failed connection.' }) error:
    string | null;
}

export class DeliveryView implements WebhookDelivery {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid', description: 'The audit event delivered (also the `webhook-id` header).' }) eventId: string;
  @ApiProperty() type: string;
  @ApiProperty({ enum: DELIVERY_STATUSES }) status: DeliveryStatus;
  @ApiProperty() attempts: number;
  @ApiProperty({ type: Number, nullable: true }) lastStatus: number | null;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
  @ApiProperty({ format: 'date-time', type: String, nullable: true, description: 'While `pending`: not before then.' }) nextAttemptAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time', type: String, nullable: true }) completedAt: string | null;
  @ApiProperty({ type: [DeliveryAttemptView], description: 'Every attempt, oldest first.' }) history: DeliveryAttemptView[];
}

export class DeliveryPage {
  @ApiProperty({ type: [DeliveryView] }) items: DeliveryView[];
  @ApiProperty({ type: String, nullable: true }) nextCursor: string | null;
}

export class DeliveriesQuery extends PageQuery {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES)
  status?: DeliveryStatus;
}
