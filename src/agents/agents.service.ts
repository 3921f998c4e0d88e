import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { actingKeyOf, actorOf, orgIdOf, RequestContext } from '../auth/principal';
import { holdActingKey } from '../database/org-limit';
import { ApiError } from '../common/api-error';
import { isUniqueViolation } from '../common/db-errors';
import { decodeCursor, DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../common/pagination';
import { AgentSpecDto, AgentView, CreateAgentDto, toAgentSpec } from './agents.dto';
import { AgentRow, AgentsRepository } from './agents.repository';
import type { AgentSpec } from './built-version';

export type { AgentRow } from './agents.repository';

export const EMPTY_SPEC: AgentSpec = { instructions: '', capabilities: [] };

/** Agents and their drafts. Publishing and versions live in VersionsService. */
@Injectable()
export class AgentsService {
  constructor(
    private readonly repo: AgentsRepository,
    private readonly audit: AuditService,
  ) {}

  async create(ctx: RequestContext, dto: CreateAgentDto): Promise<AgentView> {
    const orgId = orgIdOf(ctx);
    const id = randomUUID();
    try {
      return await this.repo.dataSource.transaction(async (m) => {
        const row = await this.repo.insert(orgId, { id, slug: dto.slug, name: dto.name, description: dto.description ?? null, draft: EMPTY_SPEC }, m);
        // The insert waits for the organization's other agent writes (their usage row) or a pool connection: a key revoked meanwhile makes no agent.
        await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
        await this.repo.assertWithinStorage(m, orgId);
        await this.audit.record(m, {
          type: 'agent.created',
          orgId,
          actor: actorOf(ctx.principal),
          target: { type: 'agent', id },
          data: { slug: dto.slug, name: dto.name },
        });
        return toAgent(row);
      });
    } catch (err) {
      if (isUniqueViolation(err, 'agent_org_slug_key')) throw ApiError.conflict(`An agent with the slug "${dto.slug}" exists in this organization.`);
      throw err;
    }
  }

  async list(orgId: string, query: PageQuery): Promise<Page<AgentView>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor, ['text']);
    const { rows, found } = await this.repo.listBySlug(orgId, after ? String(after[0]) : undefined, limit + 1);
    return pageOf(rows, limit, (r) => [r.slug], toAgent, undefined, found);
  }

  async get(orgId: string, agentId: string): Promise<AgentView> {
    return toAgent(await this.findRow(this.repo.dataSource, orgId, agentId));
  }

  /** Any well-shaped spec is saved; whether it can be published is `validate`'s question. */
  async replaceDraft(ctx: RequestContext, agentId: string, dto: AgentSpecDto): Promise<AgentView> {
    const row = await this.repo.replaceDraft(orgIdOf(ctx), agentId, toAgentSpec(dto), actingKeyOf(ctx.principal));
    if (!row) throw ApiError.notFound('agent');
    return toAgent(row);
  }

  /** After a version is inserted in `m`: see AgentsRepository.assertWithinStorage. */
  assertWithinStorage(m: EntityManager, orgId: string): Promise<void> {
    return this.repo.assertWithinStorage(m, orgId);
  }

  /** Before a publish composes: see AgentsRepository.assertRoomToGrow. */
  assertRoomToGrow(orgId: string): Promise<void> {
    return this.repo.assertRoomToGrow(orgId);
  }

  setLatestVersion(m: EntityManager, orgId: string, agentId: string, version: number): Promise<void> {
    return this.repo.setLatestVersion(orgId, agentId, version, m);
  }

  async findRow(manager: EntityManager | DataSource, orgId: string, agentId: string, lock = false): Promise<AgentRow> {
    const row = await this.repo.find(orgId, agentId, manager, lock);
    if (!row) throw ApiError.notFound('agent');
    return row;
  }
}

export function toAgent(r: AgentRow): AgentView {
  return {
    id: r.id,
    slug: r.slug,
    name: r.name,
    description: r.description,
    draft: r.draft,
    latestVersion: r.latest_version,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}
