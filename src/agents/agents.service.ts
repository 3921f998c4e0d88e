import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { actorOf, orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { isUniqueViolation } from '../common/db-errors';
import { decodeCursor, DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../common/pagination';
import { AgentSpecDto, AgentView, CreateAgentDto, toAgentSpec } from './agents.dto';
import type { AgentSpec } from './built-version';

export interface AgentRow {
  id: string;
  org_id: string;
  slug: string;
  name: string;
  description: string | null;
  draft: AgentSpec;
  latest_version: number | null;
  created_at: Date;
  updated_at: Date;
}

export const EMPTY_SPEC: AgentSpec = { instructions: '', capabilities: [] };

/** Agents and their drafts. Publishing and versions live in VersionsService. */
@Injectable()
export class AgentsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async create(ctx: RequestContext, dto: CreateAgentDto): Promise<AgentView> {
    const orgId = orgIdOf(ctx);
    const id = randomUUID();
    try {
      return await this.dataSource.transaction(async (m) => {
        const [row]: AgentRow[] = await m.query(
          `INSERT INTO agent (id, org_id, slug, name, description, draft) VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING *`,
          [id, orgId, dto.slug, dto.name, dto.description ?? null, JSON.stringify(EMPTY_SPEC)],
        );
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
    const rows: AgentRow[] = after
      ? await this.dataSource.query(`SELECT * FROM agent WHERE org_id = $1 AND slug > $2 ORDER BY slug LIMIT $3`, [orgId, after[0], limit + 1])
      : await this.dataSource.query(`SELECT * FROM agent WHERE org_id = $1 ORDER BY slug LIMIT $2`, [orgId, limit + 1]);
    return pageOf(rows, limit, (r) => [r.slug], toAgent);
  }

  async get(orgId: string, agentId: string): Promise<AgentView> {
    return toAgent(await this.findRow(this.dataSource, orgId, agentId));
  }

  /** Any well-shaped spec is saved; whether it can be published is `validate`'s question. */
  async replaceDraft(orgId: string, agentId: string, dto: AgentSpecDto): Promise<AgentView> {
    const [rows]: [AgentRow[], number] = await this.dataSource.query(
      `UPDATE agent SET draft = $3::jsonb, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, agentId, JSON.stringify(toAgentSpec(dto))],
    );
    if (rows.length === 0) throw ApiError.notFound('agent');
    return toAgent(rows[0]);
  }

  async findRow(manager: EntityManager | DataSource, orgId: string, agentId: string, lock = false): Promise<AgentRow> {
    const [row]: AgentRow[] = await manager.query(`SELECT * FROM agent WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [orgId, agentId]);
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
