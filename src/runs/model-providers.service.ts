import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuditService } from '../audit/audit.service';
import { actingKeyOf, actorOf, orgIdOf, RequestContext } from '../auth/principal';
import { countingTransaction, countUnderOrgLock, holdActingKey } from '../database/org-limit';
import { ApiError } from '../common/api-error';
import { isUniqueViolation } from '../common/db-errors';
import { Page, PageQuery } from '../common/pagination';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { shownUrl } from '../common/url-secrets';
import { EgressService } from '../egress/egress.service';
import { SecretsService } from '../secrets/secrets.service';
import { ChatModel, ModelError, OpenAiCompatibleModel } from './model-client';
import { ModelProviderRow, ModelProvidersRepository } from './model-providers.repository';
import type { CreateModelProviderDto, ModelProviderView } from './runs.dto';

/**
 * An organization's model providers: where its agents' models are, and the key to them. The key is
 * sealed (SecretsService) before it is stored and opened only to make a call; no answer holds it.
 */
/**
 * An organization's model providers: each row is small (under 7 KB) but nothing else bounded how
 * many an admin key made at its rate limit (attack round 13, note); a hundred is more endpoints
 * and keys than an organization runs its agents on.
 */
export const MAX_MODEL_PROVIDERS_PER_ORG = 100;

@Injectable()
export class ModelProvidersService {
  constructor(
    private readonly repo: ModelProvidersRepository,
    private readonly audit: AuditService,
    private readonly secrets: SecretsService,
    private readonly egress: EgressService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(ctx: RequestContext, dto: CreateModelProviderDto): Promise<ModelProviderView> {
    const orgId = orgIdOf(ctx);
    assertBaseUrlShape(dto.baseUrl);
    // Refused when saved (422 egress_refused at baseUrl), not at the first run.
    await this.egress.assertAllowed(dto.baseUrl, 'baseUrl', orgId);
    const id = randomUUID();
    const sealed = dto.apiKey === undefined ? null : this.secrets.seal(dto.apiKey);
    try {
      const row = await countingTransaction(this.repo.dataSource, 'model_provider', orgId, async (m) => {
        // Counted under the organization's lock, so creations at once count one after another.
        if ((await countUnderOrgLock(m, 'model_provider', orgId)) >= MAX_MODEL_PROVIDERS_PER_ORG) {
          throw ApiError.conflict(`An organization has at most ${MAX_MODEL_PROVIDERS_PER_ORG} model providers; delete one first.`);
        }
        // The address was resolved for the egress policy first, as long as its DNS took: where every
        // run on it will send its transcript is not saved by a key revoked meanwhile (holdActingKey).
        await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
        const created = await this.repo.insert(orgId, { id, name: dto.name, kind: dto.kind, baseUrl: dto.baseUrl, apiKeySealed: sealed }, m);
        await this.audit.record(m, {
          type: 'model_provider.created',
          orgId,
          actor: actorOf(ctx.principal),
          target: { type: 'model_provider', id },
          data: { name: dto.name, kind: dto.kind, baseUrl: dto.baseUrl, hasApiKey: sealed !== null },
        });
        return created;
      });
      return toView(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw ApiError.conflict(`A model provider named "${dto.name}" already exists in this organization.`);
      throw err;
    }
  }

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<ModelProviderView>> {
    return this.repo.page(orgIdOf(ctx), query, toView);
  }

  async get(ctx: RequestContext, id: string): Promise<ModelProviderView> {
    return toView(await this.row(orgIdOf(ctx), id));
  }

  /** 409 resource_in_use while a published version names it: that version could no longer run. */
  async delete(ctx: RequestContext, id: string): Promise<void> {
    const orgId = orgIdOf(ctx);
    await this.repo.dataSource.transaction(async (m) => {
      // The lock waits for a publish holding the row; the check below then sees its version.
      const row = await this.repo.lock(orgId, id, m);
      if (!row) throw ApiError.notFound('model provider');
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      const bound = await this.repo.firstBoundVersion(orgId, id, m);
      if (bound) {
        throw new ApiError('resource_in_use', `Version ${bound.version} of agent ${bound.agent_id} runs on this provider; it cannot be deleted.`);
      }
      await this.repo.delete(orgId, id, m);
      await this.audit.record(m, {
        type: 'model_provider.deleted',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'model_provider', id },
        data: { name: row.name },
      });
    });
  }

  /** Replaces (or, with null, removes) the key; the next model request of every run sends the new one. */
  async setApiKey(ctx: RequestContext, id: string, apiKey: string | null): Promise<ModelProviderView> {
    const orgId = orgIdOf(ctx);
    const sealed = apiKey === null ? null : this.secrets.seal(apiKey);
    const row = await this.repo.dataSource.transaction(async (m) => {
      const updated = await this.repo.setApiKey(orgId, id, sealed, m);
      if (!updated) throw ApiError.notFound('model provider');
      // Held once the row is: the key every run on this provider sends is not set by a key revoked meanwhile.
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      await this.audit.record(m, {
        type: 'model_provider.api_key_updated',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'model_provider', id },
        data: { name: updated.name, hasApiKey: sealed !== null },
      });
      return updated;
    });
    return toView(row);
  }

  async exists(orgId: string, id: string): Promise<boolean> {
    return this.repo.exists(orgId, id);
  }

  /**
   * The model a run calls; undefined when the organization has no such provider. A run holds it for
   * all its steps, so each request reads the provider again: a key replaced since (on any node) is
   * the one the next request sends, never one kept in memory. The client is kept while the stored
   * key and base URL stay the same.
   */
  async modelFor(orgId: string, providerId: string): Promise<ChatModel | undefined> {
    if (!(await this.repo.exists(orgId, providerId))) return undefined;
    let current: { row: ModelProviderRow; model: ChatModel } | undefined;
    const model = async () => {
      const row = await this.repo.find(orgId, providerId);
      // Not while a version names it (delete is refused then); kept for a row removed by hand.
      if (!row) throw new ModelError('model_error', 'The model provider no longer exists.', false);
      if (!current || current.row.api_key_sealed !== row.api_key_sealed || current.row.base_url !== row.base_url) {
        current = { row, model: this.clientOf(row) };
      }
      return current.model;
    };
    return {
      complete: async (req) => (await model()).complete(req),
      attempt: async (req, attempt) => (await model()).attempt(req, attempt),
    };
  }

  /** A client with the key opened for it only. */
  private clientOf(row: ModelProviderRow): ChatModel {
    const apiKey = row.api_key_sealed === null ? null : this.secrets.open(row.api_key_sealed);
    return new OpenAiCompatibleModel(row.id, row.base_url, apiKey, (url, init) => this.egress.fetch(url, { ...init, org: row.org_id }), {
      retries: this.config.runs.modelRetries,
      baseDelayMs: this.config.runs.modelRetryBaseMs,
      maxDelayMs: Math.max(this.config.runs.modelRetryBaseMs * 16, 1000),
      timeoutMs: this.config.runs.modelTimeoutMs,
    });
  }

  private async row(orgId: string, id: string): Promise<ModelProviderRow> {
    const row = await this.repo.find(orgId, id);
    if (!row) throw ApiError.notFound('model provider');
    return row;
  }
}

/**
 * A base URL is a prefix the client appends paths to (`/chat/completions`): a query or fragment in
 * it never reached the provider as meant (the path landed inside it), and a key in it was shown to
 * every viewer. The key goes in `apiKey`, which is sealed.
 */
function assertBaseUrlShape(baseUrl: string): void {
  // Either character ends the path of any URL (userinfo cannot hold them unescaped).
  if (baseUrl.includes('?') || baseUrl.includes('#')) {
    throw ApiError.invalidRequest([
      { path: 'baseUrl', code: 'url', message: 'baseUrl takes no query string or fragment; send the API key in apiKey, where it is stored sealed' },
    ]);
  }
}

/** A provider saved with a query before it was refused shows as a URL with one would. */
function toView(r: ModelProviderRow): ModelProviderView {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    baseUrl: shownUrl(r.base_url),
    hasApiKey: r.api_key_sealed !== null,
    createdAt: new Date(r.created_at).toISOString(),
  };
}
