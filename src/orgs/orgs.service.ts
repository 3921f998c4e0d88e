import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { ApiKeyRevocations } from '../auth/api-key-revocations';
import { ApiKeysRepository, ApiKeyRow } from '../auth/api-keys.repository';
import { countingTransaction, holdActingKey, turnTransaction } from '../database/org-limit';
import { actingKeyOf, actorOf, isOrgPrincipal, RequestContext, Role } from '../auth/principal';
import { displayPrefix, generateApiKeyToken, hashToken } from '../auth/tokens';
import { ApiError } from '../common/api-error';
import { isUniqueViolation } from '../common/db-errors';
import { decodeCursor, DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../common/pagination';
import { ApiKeyPolicyDto, ApiKeyPolicyView, ApiKeyView, CreateApiKeyDto, CreatedApiKeyView, CreateOrgDto, instantOf, OrgView } from './orgs.dto';
import { OrgRow, OrgsRepository } from './orgs.repository';
import { UsageView } from './usage.dto';
import { UsageRepository } from './usage.repository';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../config/database-config';

/**
 * Keys an organization may hold unrevoked. One admin key made 1,200 in 10 s (attack round 9): each
 * is a row, a credential to watch and a line of the keys page, and no deployment runs that many
 * runtimes under one organization.
 */
export const MAX_ACTIVE_API_KEYS_PER_ORG = 1000;

/** API_KEYS_CREATED_PER_DAY when the configuration does not say (src/config/auth-config.ts says why). */
export const DEFAULT_API_KEYS_CREATED_PER_DAY = 1000;

/** 429 until the oldest of the day's keys turns a day old: a retry before then would be refused again. */
function keysMadeToday(perDay: number, next: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((next.getTime() - Date.now()) / 1000));
  return new ApiError(
    'rate_limited',
    `An organization makes at most ${perDay} API keys in any 24 hours; the next may be made in ${seconds} s.`,
    undefined,
    undefined,
    { 'Retry-After': String(seconds) },
  );
}

@Injectable()
export class OrgsService {
  constructor(
    private readonly orgs: OrgsRepository,
    private readonly audit: AuditService,
    private readonly keys: ApiKeysRepository,
    private readonly revocations: ApiKeyRevocations,
    private readonly usageOf: UsageRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(ctx: RequestContext, dto: CreateOrgDto): Promise<OrgView> {
    const id = randomUUID();
    const scopes = [...new Set(dto.scopes ?? [])].sort();
    try {
      return await this.orgs.dataSource.transaction(async (m) => {
        const row = await this.orgs.insert({ id, slug: dto.slug, name: dto.name, scopes }, m);
        await this.audit.record(m, {
          type: 'org.created',
          orgId: id,
          actor: actorOf(ctx.principal),
          target: { type: 'org', id },
          data: { slug: dto.slug, scopes },
        });
        return toOrg(row);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw ApiError.conflict(`The slug "${dto.slug}" is taken.`);
      throw err;
    }
  }

  async list(query: PageQuery): Promise<Page<OrgView>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor, ['text']);
    const rows = await this.orgs.listBySlug(after ? String(after[0]) : undefined, limit + 1);
    return pageOf(rows, limit, (r) => [r.slug], toOrg);
  }

  /** Platform admin, or a key of that very organization; any other caller learns nothing. */
  async get(ctx: RequestContext, orgId: string): Promise<OrgView> {
    this.assertReach(ctx, orgId);
    const row = await this.orgs.find(orgId);
    if (!row) throw ApiError.notFound('organization');
    return toOrg(row);
  }

  async updateScopes(ctx: RequestContext, orgId: string, scopes: string[]): Promise<OrgView> {
    const sorted = [...new Set(scopes)].sort();
    return this.orgs.dataSource.transaction(async (m) => {
      const before = await this.orgs.lockScopes(orgId, m);
      if (before === undefined) throw ApiError.notFound('organization');
      const row = await this.orgs.setScopes(orgId, sorted, m);
      await this.audit.record(m, {
        type: 'org.scopes_updated',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'org', id: orgId },
        data: {
          scopes: sorted,
          added: sorted.filter((s) => !before.includes(s)),
          removed: before.filter((s) => !sorted.includes(s)),
        },
      });
      return toOrg(row);
    });
  }

  async createKey(ctx: RequestContext, orgId: string, dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    this.assertReach(ctx, orgId);
    const id = randomUUID();
    const token = generateApiKeyToken();
    const roles = [...new Set(dto.roles)];
    const agentIds = pinnedAgentsOf(dto.agentIds, roles);
    return countingTransaction(this.orgs.dataSource, 'api_key', orgId, async (m) => {
      const active = await this.keys.countActiveUnderLock(orgId, m);
      // Read once the count's lock is held, and held (a policy set meanwhile waits, or is seen): read
      // before, a creation queued behind others kept the policy it found on arrival (V-F3).
      const policy = await this.orgs.keyPolicy(orgId, m, true);
      if (!policy) throw ApiError.notFound('organization');
      // Creations queue behind one another on the count's lock: a key revoked meanwhile makes no more keys.
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      if (active >= MAX_ACTIVE_API_KEYS_PER_ORG) {
        throw ApiError.conflict(`An organization has at most ${MAX_ACTIVE_API_KEYS_PER_ORG} API keys that are not revoked; revoke one first.`);
      }
      const perDay = this.config.apiKeysCreatedPerDay ?? DEFAULT_API_KEYS_CREATED_PER_DAY;
      const next = await this.keys.nextCreationAt(orgId, perDay, m);
      if (next) throw keysMadeToday(perDay, next);
      const expiresAt = keyExpiry(dto.expiresAt, policy.maxLifetimeDays);
      if (agentIds) await this.assertAgentsOf(orgId, agentIds, m);
      const row = await this.keys.insert(
        orgId,
        { id, name: dto.name, roles, tokenPrefix: displayPrefix(token), tokenHash: hashToken(token), expiresAt, agentIds },
        m,
      );
      await this.audit.record(m, {
        type: 'api_key.created',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'api_key', id },
        data: { name: dto.name, roles, ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}), ...(agentIds ? { agentIds } : {}) },
      });
      return { ...toKey(row), token };
    });
  }

  /** 400 at `agentIds[i]` for each id that names no agent of the organization (agents are never deleted). */
  private async assertAgentsOf(orgId: string, agentIds: string[], m: EntityManager): Promise<void> {
    const known = new Set(await this.orgs.agentsAmong(orgId, agentIds, m));
    const errors = agentIds.flatMap((id, i) =>
      known.has(id) ? [] : [{ path: `agentIds[${i}]`, code: 'unknown_agent', message: 'No agent of this organization has this id.' }],
    );
    if (errors.length > 0) throw ApiError.invalidRequest(errors);
  }

  async listKeys(ctx: RequestContext, orgId: string, query: PageQuery): Promise<Page<ApiKeyView>> {
    this.assertReach(ctx, orgId);
    if (!(await this.orgs.exists(orgId))) throw ApiError.notFound('organization');
    return this.keys.list(orgId, query, toKey);
  }

  /** Revokes the key, and in the same transaction ends what acts for it (its runs: ApiKeyRevocations). */
  async revokeKey(ctx: RequestContext, orgId: string, keyId: string): Promise<void> {
    this.assertReach(ctx, orgId);
    const actor = actorOf(ctx.principal);
    const committed = await this.orgs.dataSource.transaction(async (m) => {
      const revoked = await this.keys.revoke(orgId, keyId, m, actingKeyOf(ctx.principal));
      if (revoked === 'missing') throw ApiError.notFound('API key');
      // Revoking twice is a no-op that still answers 204: the client's intent holds.
      if (revoked === 'already') return undefined;
      await this.audit.record(m, { type: 'api_key.revoked', orgId, actor, target: { type: 'api_key', id: keyId } });
      return this.revocations.revoked(m, { orgId, keyId, actor });
    });
    committed?.();
  }

  async keyPolicy(ctx: RequestContext, orgId: string): Promise<ApiKeyPolicyView> {
    this.assertReach(ctx, orgId);
    const policy = await this.orgs.keyPolicy(orgId);
    if (!policy) throw ApiError.notFound('organization');
    return policy;
  }

  async setKeyPolicy(ctx: RequestContext, orgId: string, dto: ApiKeyPolicyDto): Promise<ApiKeyPolicyView> {
    this.assertReach(ctx, orgId);
    // Policies of one organization serialize on its row: 100 set at once held the pool's connections
    // waiting (attack round 21, AE-N1). Not in the key creations' turn: creations queued there are
    // held to a policy set meanwhile (V-F3).
    return turnTransaction(this.orgs.dataSource, 'api_key_policy', orgId, async (m) => {
      const replaced = await this.orgs.setKeyPolicy(orgId, dto.maxLifetimeDays, m);
      if (!replaced) throw ApiError.notFound('organization');
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      await this.audit.record(m, {
        type: 'org.api_key_policy_updated',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'org', id: orgId },
        data: { maxLifetimeDays: dto.maxLifetimeDays, previous: replaced.previous },
      });
      return { maxLifetimeDays: dto.maxLifetimeDays };
    });
  }

  /** Each bound the organization is held to, with what it holds of it. */
  async usage(ctx: RequestContext, orgId: string): Promise<UsageView> {
    this.assertReach(ctx, orgId);
    if (!(await this.orgs.exists(orgId))) throw ApiError.notFound('organization');
    const used = await this.usageOf.of(orgId);
    const limits = this.config.storage ?? DEFAULT_STORAGE_LIMITS;
    return {
      items: [
        { meter: 'knowledge', unit: 'bytes', used: Number(used.knowledge), limit: limits.knowledgeBytesPerOrg, setting: 'KNOWLEDGE_MAX_BYTES_PER_ORG' },
        {
          meter: 'collections',
          unit: 'items',
          used: used.collections,
          limit: limits.knowledgeCollectionsPerOrg ?? DEFAULT_STORAGE_LIMITS.knowledgeCollectionsPerOrg!,
          setting: 'KNOWLEDGE_MAX_COLLECTIONS_PER_ORG',
        },
        {
          meter: 'documents',
          unit: 'items',
          used: Number(used.documents),
          limit: limits.knowledgeDocumentsPerOrg ?? DEFAULT_STORAGE_LIMITS.knowledgeDocumentsPerOrg!,
          setting: 'KNOWLEDGE_MAX_DOCUMENTS_PER_ORG',
        },
        { meter: 'agents', unit: 'bytes', used: Number(used.agents), limit: limits.agentBytesPerOrg, setting: 'AGENTS_MAX_BYTES_PER_ORG' },
        { meter: 'runs', unit: 'bytes', used: Number(used.runs), limit: limits.runBytesPerOrg, setting: 'RUNS_MAX_BYTES_PER_ORG' },
        { meter: 'skills', unit: 'items', used: used.skills, limit: limits.skillsPerOrg, setting: 'SKILLS_MAX_PER_ORG' },
        { meter: 'api_keys', unit: 'items', used: used.api_keys, limit: MAX_ACTIVE_API_KEYS_PER_ORG, setting: 'fixed' },
        {
          meter: 'memories',
          unit: 'bytes',
          used: Number(used.memories),
          limit: limits.memoryBytesPerOrg ?? DEFAULT_STORAGE_LIMITS.memoryBytesPerOrg!,
          setting: 'MEMORY_MAX_BYTES_PER_ORG',
        },
      ],
    };
  }

  private assertReach(ctx: RequestContext, orgId: string): void {
    if (isOrgPrincipal(ctx.principal) && ctx.principal.orgId !== orgId) throw ApiError.notFound('organization');
  }
}

function toOrg(r: OrgRow): OrgView {
  return { id: r.id, slug: r.slug, name: r.name, scopes: r.scopes, createdAt: new Date(r.created_at).toISOString() };
}

/**
 * The agents a new key is pinned to (lower case), or null. Only a runtime's key (the `agent` role
 * alone) is pinned: the other roles read and change the organization's agents as a whole (a pinned
 * viewer would still read every agent's approvals and audit), so pinning them would promise what
 * is not kept.
 */
function pinnedAgentsOf(agentIds: string[] | null | undefined, roles: Role[]): string[] | null {
  if (agentIds === undefined || agentIds === null) return null;
  if (roles.length !== 1 || roles[0] !== 'agent') {
    throw ApiError.invalidRequest([
      { path: 'agentIds', code: 'agent_role_only', message: 'Only a key whose only role is `agent` (a runtime key) may be pinned to agents.' },
    ]);
  }
  return agentIds.map((id) => id.toLowerCase());
}

function toKey(r: ApiKeyRow): ApiKeyView {
  return {
    id: r.id,
    name: r.name,
    roles: r.roles,
    tokenPrefix: r.token_prefix,
    createdAt: new Date(r.created_at).toISOString(),
    revokedAt: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
    expiresAt: r.expires_at ? new Date(r.expires_at).toISOString() : null,
    agentIds: r.agent_ids,
    lastUsedAt: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
  };
}

/**
 * When a new key expires: as asked, or, under the organization's policy, no later than its longest
 * lifetime from now (a key asked without an expiry gets that one).
 */
function keyExpiry(asked: string | null | undefined, maxLifetimeDays: number | null): Date | null {
  const latest = maxLifetimeDays === null ? undefined : Date.now() + maxLifetimeDays * 86_400_000;
  if (!asked) return latest === undefined ? null : new Date(latest);
  const at = instantOf(asked);
  if (latest !== undefined && at > latest) {
    throw ApiError.invalidRequest(
      [
        {
          path: 'expiresAt',
          code: 'beyondKeyPolicy',
          message: `expiresAt must be at most ${maxLifetimeDays} days from now: the organization's keys live no longer (its API key policy)`,
        },
      ],
      "The organization's API key policy bounds how long a key may live.",
    );
  }
  return new Date(at);
}
