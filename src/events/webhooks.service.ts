import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { actingKeyOf, actorOf, orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { normalizeInstant } from '../common/instant';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { Page, PageQuery } from '../common/pagination';
import { EgressService } from '../egress/egress.service';
import { SecretsService } from '../secrets/secrets.service';
import { shownUrl, urlHidesSomething } from '../common/url-secrets';
import { CreateWebhookDto } from './webhooks.dto';
import { RecentCounts } from './recent-counts';
import { DeliveryStatus, RotatedSecret, WebhookDelivery, WebhookEndpoint, WebhooksRepository } from './webhooks.repository';

/** Live endpoints one organization may have: each one multiplies every event's deliveries. */
export const MAX_WEBHOOKS_PER_ORG = 50;

/** How long this node answers an endpoint's `backlog.pending` with a count it made before. */
export const PENDING_REUSE_MS = 1_000;

@Injectable()
export class WebhooksService implements OnApplicationBootstrap {
  private readonly logger = new Logger(WebhooksService.name);
  private readonly pending: RecentCounts;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly secrets: SecretsService,
    private readonly egress: EgressService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.pending = new RecentCounts((orgId, ids) => this.repo.pendingCounts(orgId, ids, config.webhookMaxPendingPerEndpoint), PENDING_REUSE_MS);
  }

  /** Endpoints saved before URLs holding a token were sealed are sealed now. */
  onApplicationBootstrap(): Promise<void> {
    return this.repo.sealStoredUrls((url) => this.secrets.seal(url), this.logger);
  }

  async create(ctx: RequestContext, dto: CreateWebhookDto): Promise<WebhookEndpoint & { secret: string }> {
    const orgId = orgIdOf(ctx);
    // Judged as given, like every saved URL (a credential in it is the policy's to refuse: 422).
    await this.egress.assertAllowed(dto.url, 'url', orgId);
    const url = normalized(dto.url);
    const secret = newSecret();
    const id = randomUUID();
    // A receiver's token in the query (`?token=`) is a credential: sealed, never shown, not even to admins.
    const shown = shownUrl(url);
    const urlSealed = urlHidesSomething(url) ? this.secrets.seal(url) : null;
    const endpoint = await this.repo.create(
      orgId,
      { id, url: shown, urlSealed, types: dto.types, description: dto.description ?? null, secretSealed: this.secrets.seal(secret) },
      { type: 'webhook.created', orgId, actor: actorOf(ctx.principal), target: { type: 'webhook', id }, data: { url: shown, types: dto.types } },
      MAX_WEBHOOKS_PER_ORG,
      this.config.webhookMaxPendingPerEndpoint,
      actingKeyOf(ctx.principal),
    );
    if (!endpoint) throw ApiError.conflict(`An organization has at most ${MAX_WEBHOOKS_PER_ORG} webhooks; delete one first.`);
    return { ...endpoint, secret };
  }

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<WebhookEndpoint>> {
    const orgId = orgIdOf(ctx);
    const page = await this.repo.list(orgId, query, this.config.webhookMaxPendingPerEndpoint);
    return { ...page, items: await this.withPending(orgId, page.items) };
  }

  async get(ctx: RequestContext, id: string): Promise<WebhookEndpoint> {
    const orgId = orgIdOf(ctx);
    const endpoint = await this.repo.find(orgId, id, this.config.webhookMaxPendingPerEndpoint);
    if (!endpoint) throw ApiError.notFound('webhook');
    return (await this.withPending(orgId, [endpoint]))[0];
  }

  private async withPending(orgId: string, endpoints: WebhookEndpoint[]): Promise<WebhookEndpoint[]> {
    if (endpoints.length === 0) return endpoints;
    const counts = await this.pending.of(
      orgId,
      endpoints.map((e) => e.id),
    );
    return endpoints.map((e) => ({ ...e, backlog: { ...e.backlog, pending: counts.get(e.id) ?? 0 } }));
  }

  async delete(ctx: RequestContext, id: string): Promise<void> {
    const orgId = orgIdOf(ctx);
    const url = await this.repo.urlOf(orgId, id);
    if (url === undefined) throw ApiError.notFound('webhook');
    const deleted = await this.repo.delete(
      orgId,
      id,
      {
        type: 'webhook.deleted',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'webhook', id },
        data: { url },
      },
      actingKeyOf(ctx.principal),
    );
    if (!deleted) throw ApiError.notFound('webhook');
  }

  /**
   * A new signing secret, shown in this answer only. The one replaced keeps signing deliveries
   * beside it (Standard Webhooks' rotation: two `v1,` signatures, the new one first) for
   * `keepPreviousForSeconds`, so receivers move to the new one without refusing a delivery.
   */
  async rotateSecret(
    ctx: RequestContext,
    id: string,
    keepPreviousForSeconds: number,
    ifSecretRotatedAt?: string | null,
  ): Promise<RotatedSecret & { secret: string }> {
    const orgId = orgIdOf(ctx);
    const secret = newSecret();
    // Read as every instant of the API is (normalizeInstant: UTC without an offset, never the node's zone); the DTO refused what it cannot read.
    const condition =
      ifSecretRotatedAt === undefined || ifSecretRotatedAt === null ? ifSecretRotatedAt : new Date(normalizeInstant(ifSecretRotatedAt) ?? Number.NaN);
    const rotated = await this.repo.rotateSecret(
      orgId,
      id,
      this.secrets.seal(secret),
      keepPreviousForSeconds,
      condition,
      ({ url, previousSecretExpiresAt }) => ({
        type: 'webhook.secret_rotated',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'webhook', id },
        data: { url, previousSecretExpiresAt },
      }),
      actingKeyOf(ctx.principal),
    );
    if (!rotated) throw ApiError.notFound('webhook');
    if ('rotatedSince' in rotated) {
      // Another rotation came first: its secret is the one to keep, and this one changed nothing.
      throw new ApiError(
        'conflict',
        rotated.rotatedSince === null
          ? 'The secret was never rotated; read the webhook again.'
          : `The secret was rotated at ${rotated.rotatedSince}, since the time given; read the webhook again before rotating it.`,
        [{ path: 'ifSecretRotatedAt', code: 'rotated_since', message: 'not when the secret was last rotated' }],
      );
    }
    return { id: rotated.id, secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt, secretRotatedAt: rotated.secretRotatedAt };
  }

  async deliveries(ctx: RequestContext, id: string, query: PageQuery & { status?: DeliveryStatus }): Promise<Page<WebhookDelivery>> {
    const orgId = orgIdOf(ctx);
    if ((await this.repo.urlOf(orgId, id)) === undefined) throw ApiError.notFound('webhook');
    return this.repo.deliveries(orgId, id, query);
  }
}

/** Standard Webhooks' secret format: whsec_ and 32 random bytes, base64. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** As every answer shows it: the URL parser's spelling, without a fragment (never sent). */
function normalized(text: string): string {
  const url = new URL(text);
  url.hash = '';
  return url.toString();
}
