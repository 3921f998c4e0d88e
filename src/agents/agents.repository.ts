import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error';
import { OrgGate } from '../common/org-gate';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../config/database-config';
import { BudgetedRows, rowsWithinBudget } from '../database/keyset-page';
import { holdActingKey } from '../database/org-limit';
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

/** The agent row with the caller's manager; with `lock`, FOR UPDATE until its transaction ends (publish and retire serialize on it). */
export async function findAgentWith(m: Pick<DataSource, 'query'>, orgId: string, agentId: string, lock = false): Promise<AgentRow | undefined> {
  const [row]: AgentRow[] = await m.query(`SELECT * FROM agent WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [orgId, agentId]);
  return row;
}

/**
 * The owner of `agent` (its versions are the version store's). Every method takes the
 * organization first; writes that carry an audit event, and reads that lock, take the manager.
 */
@Injectable()
export class AgentsRepository {
  private readonly maxBytes: number;
  /** An organization's draft saves, one at a time on the node (replaceDraft). */
  private readonly drafts = new OrgGate(1);

  constructor(
    readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxBytes = (config.storage ?? DEFAULT_STORAGE_LIMITS).agentBytesPerOrg;
  }

  /**
   * After a write in `m` that made the organization's agents weigh more: past AGENTS_MAX_BYTES_PER_ORG
   * it is `409` and the transaction rolls back. The total is kept by triggers (agent_usage), and the
   * write's own trigger holds its row to commit, so writes at once are counted one after another.
   */
  async assertWithinStorage(m: Pick<DataSource, 'query'>, orgId: string): Promise<void> {
    const stored = await this.stored(m, orgId);
    if (stored > this.maxBytes) throw this.overBound(stored, 'would hold');
  }

  /**
   * Before a publish composes its version: `409` when the organization's agents already weigh their
   * bound, so that a version which would be refused once composed (a version adds at least its 512
   * bytes) costs nothing to refuse: an agent of 10,000 MCP tools took half a second to compose
   * (attack round 15, Q-F4).
   */
  async assertRoomToGrow(orgId: string): Promise<void> {
    const stored = await this.stored(this.dataSource, orgId);
    if (stored >= this.maxBytes) throw this.overBound(stored, 'hold');
  }

  private async stored(m: Pick<DataSource, 'query'>, orgId: string): Promise<number> {
    const [row]: { bytes: string }[] = await m.query(`SELECT bytes::text AS bytes FROM agent_usage WHERE org_id = $1`, [orgId]);
    return Number(row?.bytes ?? 0);
  }

  private overBound(stored: number, verb: string): ApiError {
    return ApiError.conflict(
      `This organization's agents ${verb} ${stored} bytes (drafts, descriptions and published versions, and 512 bytes for each agent and version) of the ${this.maxBytes} it may store (AGENTS_MAX_BYTES_PER_ORG); nothing was written. Shorten drafts, or ask the operator for more: published versions are kept for good.`,
    );
  }

  async insert(
    orgId: string,
    a: { id: string; slug: string; name: string; description: string | null; draft: AgentSpec },
    m: EntityManager,
  ): Promise<AgentRow> {
    const [row]: AgentRow[] = await m.query(
      `INSERT INTO agent (id, org_id, slug, name, description, draft) VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING *`,
      [a.id, orgId, a.slug, a.name, a.description, JSON.stringify(a.draft)],
    );
    return row;
  }

  /** Ordered by slug, after `afterSlug` when given; a draft is free-form until publish (up to the body limit), so the page ends at the byte budget. */
  listBySlug(orgId: string, afterSlug: string | undefined, limit: number): Promise<BudgetedRows<AgentRow>> {
    const params: unknown[] = [orgId, limit];
    if (afterSlug !== undefined) params.push(afterSlug);
    return rowsWithinBudget(this.dataSource, {
      text: `SELECT * FROM agent WHERE org_id = $1${afterSlug !== undefined ? ' AND slug > $3' : ''} ORDER BY slug LIMIT $2`,
      params,
      order: 'slug',
      bytes: ['w.draft_bytes', 'octet_length(w.description)'],
    });
  }

  find(orgId: string, agentId: string, manager: Pick<DataSource, 'query'> = this.dataSource, lock = false): Promise<AgentRow | undefined> {
    return findAgentWith(manager, orgId, agentId, lock);
  }

  /**
   * `actingKey` held once the agent's row is: a save waits for the agent's publishes (they hold the
   * row), and one queued there while its key was revoked saved the draft after the revocation (a
   * leaked key's instructions, for the next publish to ship).
   */
  async replaceDraft(orgId: string, agentId: string, draft: AgentSpec, actingKey?: string): Promise<AgentRow | undefined> {
    // In the organization's turn on the node, holding no connection until then: each save waits for
    // the agent's row and the organization's weight (agent_usage, by trigger), and 100 saves at once
    // held 9 of 10 connections waiting (attack round 21, AE-F3).
    return this.drafts.run(orgId, () =>
      this.dataSource.transaction(async (m) => {
        const [rows]: [(AgentRow & { grew: boolean })[], number] = await m.query(
          `WITH before AS (SELECT draft_bytes FROM agent WHERE org_id = $1 AND id = $2 FOR UPDATE)
         UPDATE agent a SET draft = $3::jsonb, updated_at = now() FROM before
          WHERE a.org_id = $1 AND a.id = $2
         RETURNING a.*, octet_length($3::jsonb::text) > coalesce(before.draft_bytes, 0) AS grew`,
          [orgId, agentId, JSON.stringify(draft)],
        );
        if (rows.length === 0) return undefined;
        await holdActingKey(m, orgId, actingKey);
        const { grew, ...row } = rows[0];
        if (grew) await this.assertWithinStorage(m, orgId);
        return row;
      }),
    );
  }

  /** Publish's last write, in its transaction (the agent row is already locked there). */
  async setLatestVersion(orgId: string, agentId: string, version: number, m: EntityManager): Promise<void> {
    await m.query(`UPDATE agent SET latest_version = $3, updated_at = now() WHERE org_id = $1 AND id = $2`, [orgId, agentId, version]);
  }
}
