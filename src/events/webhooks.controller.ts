import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { SAVED_URL_REFUSALS } from '../egress/egress.service';
import { PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import {
  CreatedWebhookView,
  CreateWebhookDto,
  DEFAULT_KEEP_PREVIOUS_SECONDS,
  DeliveriesQuery,
  DeliveryPage,
  RotatedWebhookSecretView,
  RotateWebhookSecretDto,
  WebhookPage,
  WebhookView,
} from './webhooks.dto';
import { MAX_WEBHOOKS_PER_ORG, WebhooksService } from './webhooks.service';

@ApiTags('webhooks')
@Controller('api/v1/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Access('admin')
  @Post()
  @ApiOperation({
    summary: "Register an endpoint for the organization's audit events",
    description: [
      'Each event of the chosen types is POSTed to `url` following Standard Webhooks: headers `webhook-id` (the event id,',
      'the same on every attempt), `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256>`; the body',
      'is the AuditEvent. A 2xx answer within the timeout is success; anything else is retried with exponential backoff and',
      'jitter for WEBHOOK_RETRY_WINDOW_SECONDS (default 24 h), then the delivery is `failed`. At least once: deduplicate on',
      `\`webhook-id\`. At most ${MAX_WEBHOOKS_PER_ORG} endpoints per organization. An endpoint with WEBHOOK_MAX_PENDING_PER_ENDPOINT (default 10,000)`,
      'pending deliveries gets no new ones until half have drained: the events it misses stay in the audit log, and its `backlog` says how many and from when.',
    ].join(' '),
  })
  @ApiCreatedResponse({ type: CreatedWebhookView, description: 'The endpoint, with its signing secret: the only answer that shows it.' })
  @ApiConflictResponse(ProblemResponse(`The organization has ${MAX_WEBHOOKS_PER_ORG} endpoints already (\`conflict\`).`))
  @ApiBadRequestResponse(
    ProblemResponse(`The body is invalid (\`invalid_request\`; \`errors[]\` names each problem by \`path\`), or \`url\` is ${SAVED_URL_REFUSALS.invalid}.`),
  )
  @ApiUnprocessableEntityResponse(ProblemResponse(`\`url\` is ${SAVED_URL_REFUSALS.refused}; nothing stored.`))
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateWebhookDto): Promise<CreatedWebhookView> {
    return this.webhooks.create(ctx, dto);
  }

  @Access('admin')
  @Get()
  @ApiOperation({ summary: "The organization's webhook endpoints, newest first (never their secrets)" })
  @ApiOkResponse({ type: WebhookPage })
  list(@Ctx() ctx: RequestContext, @Query() query: PageQuery): Promise<WebhookPage> {
    return this.webhooks.list(ctx, query);
  }

  @Access('admin')
  @Get(':id')
  @ApiOperation({ summary: 'One webhook endpoint' })
  @ApiOkResponse({ type: WebhookView })
  @ApiNotFoundResponse(ProblemResponse('No such endpoint in this organization (`not_found`).'))
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<WebhookView> {
    return this.webhooks.get(ctx, id);
  }

  @Access('admin')
  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an endpoint; its pending deliveries end `failed`' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(ProblemResponse('No such endpoint in this organization (`not_found`).'))
  async delete(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<void> {
    await this.webhooks.delete(ctx, id);
  }

  @Access('admin')
  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Give the endpoint a new signing secret',
    description: [
      'Standard Webhooks rotation: until `previousSecretExpiresAt` every delivery, retries of those already queued included',
      '(each attempt is signed when it is sent), carries both signatures, space-separated in `webhook-signature`, the new',
      "one first (`v1,<new> v1,<old>`), which Standard Webhooks' verifiers accept with either secret; then only the new one.",
      'One previous secret at a time: rotating again drops the older one. Audited (`webhook.secret_rotated`, which never holds a secret).',
    ].join(' '),
  })
  @ApiOkResponse({ type: RotatedWebhookSecretView, description: 'The new secret: the only answer that shows it.' })
  @ApiNotFoundResponse(ProblemResponse('No such endpoint in this organization (`not_found`).'))
  @ApiBadRequestResponse(
    ProblemResponse('`keepPreviousForSeconds` is not an integer from 0 to 604800, or `ifSecretRotatedAt` not a date-time (`invalid_request`).'),
  )
  @ApiConflictResponse(ProblemResponse('`ifSecretRotatedAt` is not when the secret was last rotated (`conflict`): nothing changed.'))
  rotateSecret(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: RotateWebhookSecretDto): Promise<RotatedWebhookSecretView> {
    return this.webhooks.rotateSecret(ctx, id, dto.keepPreviousForSeconds ?? DEFAULT_KEEP_PREVIOUS_SECONDS, dto.ifSecretRotatedAt);
  }

  @Access('admin')
  @Get(':id/deliveries')
  @ApiOperation({
    summary: "The endpoint's delivery log, newest first, each delivery with its attempts",
    description: [
      'Pending deliveries, and those that finished (`succeeded`, `failed`) in the last WEBHOOK_DELIVERY_RETENTION_DAYS',
      '(default 7, from `completedAt`): older finished ones are removed with their attempts. The events stay in the audit log.',
    ].join(' '),
  })
  @ApiOkResponse({ type: DeliveryPage })
  @ApiNotFoundResponse(ProblemResponse('No such endpoint in this organization (`not_found`).'))
  deliveries(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Query() query: DeliveriesQuery): Promise<DeliveryPage> {
    return this.webhooks.deliveries(ctx, id, query);
  }
}
