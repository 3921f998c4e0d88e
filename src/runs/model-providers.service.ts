import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { actorOf, orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { isUniqueViolation } from '../common/db-errors';
import { Page, PageQuery } from '../common/pagination';
import { newestFirstPage } from '../database/keyset-page';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { EgressService } from '../egress/egress.service';
import { SecretsService } from '../secrets/secrets.service';
import { ChatModel, OpenAiCompatibleModel } from './model-client';
import type { CreateModelProviderDto, ModelProviderView } from './runs.dto';

interface ProviderRow {
  id: string;
  org_id: string;
  name: string;
  kind: 'openai-compatible';
  base_url: string;
  api_key_sealed: string | null;
  created_at: Date;
}

/**
 * An organization's model providers: where its agents' models are, and the key to them. The key is
 * sealed (SecretsService) before it is stored and opened only to make a call; no answer holds it.
 */
@Injectable()
export class ModelProvidersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
    private readonly secrets: SecretsService,
    private readonly egress: EgressService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(ctx: RequestContext, dto: CreateModelProviderDto): Promise<ModelProviderView> {
    const orgId = orgIdOf(ctx);
    // Refused when saved (422 egress_refused at baseUrl), not at the first run.
    await this.egress.assertAllowed(dto.baseUrl, 'baseUrl');
    const id = randomUUID();
    const sealed = dto.apiKey === undefined ? null : this.secrets.seal(dto.apiKey);
    try {
      const row = await this.dataSource.transaction(async (m) => {
        const [created]: ProviderRow[] = await m.query(
          `INSERT INTO model_provider (id, org_id, name, kind, base_url, api_key_sealed) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
          [id, orgId, dto.name, dto.kind, dto.baseUrl, sealed],
        );
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
    return newestFirstPage(this.dataSource, { select: 'SELECT * FROM model_provider', where: 'org_id = $1', params: [orgIdOf(ctx)] }, query, toView);
  }

  async get(ctx: RequestContext, id: string): Promise<ModelProviderView> {
    return toView(await this.row(orgIdOf(ctx), id));
  }

  /** 409 resource_in_use while a published version names it: that version could no longer run. */
  async delete(ctx: RequestContext, id: string): Promise<void> {
    const orgId = orgIdOf(ctx);
    await this.dataSource.transaction(async (m) => {
      // FOR UPDATE waits for a publish holding the row (FOR KEY SHARE); the check below then sees its version.
      const [row]: ProviderRow[] = await m.query(`SELECT * FROM model_provider WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      if (!row) throw ApiError.notFound('model provider');
      const bound: { agent_id: string; version: number }[] = await m.query(
        `SELECT agent_id, version FROM agent_version WHERE org_id = $1 AND spec ? 'model' AND spec->'model'->>'provider' = $2 LIMIT 1`,
        [orgId, id],
      );
      if (bound.length > 0) {
        throw new ApiError('resource_in_use', `Version ${bound[0].version} of agent ${bound[0].agent_id} runs on this provider; it cannot be deleted.`);
      }
      await m.query(`DELETE FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, id]);
      await this.audit.record(m, {
        type: 'model_provider.deleted',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'model_provider', id },
        data: { name: row.name },
      });
    });
  }

  async exists(orgId: string, id: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return rows.length > 0;
  }

  /** The model a run calls, with the key opened for this client only; 404-like absence is the caller's to report. */
  async modelFor(orgId: string, providerId: string): Promise<ChatModel | undefined> {
    const rows: ProviderRow[] = await this.dataSource.query(`SELECT * FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, providerId]);
    const row = rows[0];
    if (!row) return undefined;
    const apiKey = row.api_key_sealed === null ? null : this.secrets.open(row.api_key_sealed);
    return new OpenAiCompatibleModel(row.id, row.base_url, apiKey, (url, init) => this.egress.fetch(url, init), {
      retries: this.config.runs.modelRetries,
      baseDelayMs: this.config.runs.modelRetryBaseMs,
      maxDelayMs: Math.max(this.config.runs.modelRetryBaseMs * 16, 1000),
      timeoutMs: this.config.runs.modelTimeoutMs,
    });
  }

  private async row(orgId: string, id: string): Promise<ProviderRow> {
    const rows: ProviderRow[] = await this.dataSource.query(`SELECT * FROM model_provider WHERE org_id = $1 AND id = $2`, [orgId, id]);
    if (!rows[0]) throw ApiError.notFound('model provider');
    return rows[0];
  }
}

function toView(r: ProviderRow): ModelProviderView {
  return { id: r.id, name: r.name, kind: r.kind, baseUrl: r.base_url, hasApiKey: r.api_key_sealed !== null, createdAt: new Date(r.created_at).toISOString() };
}
