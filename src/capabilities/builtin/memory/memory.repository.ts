import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { ToolContext } from '../../capability.types';

export interface MemoryRow {
  id: string;
  content: string;
  tags: string[];
  created_at: Date;
  rank?: number;
}

export type RememberOutcome =
  { kind: 'created'; memory: MemoryRow; count: number } | { kind: 'existing'; memory: MemoryRow } | { kind: 'full'; count: number } | { kind: 'no_agent' };

/**
 * The `agent_memory` table, shared by `memory` (reads) and `memory-write` (writes). Every
 * statement is bounded by the organization and the agent of the calling tool: memories are per
 * agent, per organization, and nothing here takes either from anywhere else.
 */
@Injectable()
export class MemoryRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Best match first. Empty when the query has no searchable words. */
  async search(ctx: ToolContext, query: string, limit: number): Promise<MemoryRow[]> {
    return this.dataSource.query(
      `SELECT m.id, m.content, m.tags, m.created_at, ts_rank(m.search, q.query) AS rank
         FROM agent_memory m, websearch_to_tsquery('english'::regconfig, $3) AS q(query)
        WHERE m.org_id = $1 AND m.agent_id = $2 AND m.search @@ q.query
        ORDER BY rank DESC, m.created_at DESC, m.id
        LIMIT $4`,
      [ctx.orgId, ctx.agentId, query, limit],
    );
  }

  async count(ctx: ToolContext): Promise<number> {
    const [{ n }]: { n: string }[] = await this.dataSource.query(`SELECT count(*) AS n FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [
      ctx.orgId,
      ctx.agentId,
    ]);
    return Number(n);
  }

  async hasSearchableWords(query: string): Promise<boolean> {
    const [{ words }]: { words: number }[] = await this.dataSource.query(`SELECT numnode(websearch_to_tsquery('english'::regconfig, $1)) AS words`, [query]);
    return Number(words) > 0;
  }

  /**
   * Keeps a memory unless the agent already keeps the same text (then that one is returned) or
   * already keeps `max` memories. The agent's row is locked first, so concurrent calls for one
   * agent count one after the other and the limit holds.
   */
  async remember(ctx: ToolContext, content: string, tags: readonly string[], max: number): Promise<RememberOutcome> {
    return this.dataSource.transaction(async (m) => {
      const agent: unknown[] = await m.query(`SELECT 1 FROM agent WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`, [ctx.orgId, ctx.agentId]);
      if (agent.length === 0) return { kind: 'no_agent' as const };
      const [existing]: MemoryRow[] = await m.query(
        `SELECT id, content, tags, created_at FROM agent_memory WHERE org_id = $1 AND agent_id = $2 AND content = $3 ORDER BY created_at LIMIT 1`,
        [ctx.orgId, ctx.agentId, content],
      );
      if (existing) return { kind: 'existing' as const, memory: existing };
      const [{ n }]: { n: string }[] = await m.query(`SELECT count(*) AS n FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [ctx.orgId, ctx.agentId]);
      const count = Number(n);
      if (count >= max) return { kind: 'full' as const, count };
      // Past the timeout the executor has already answered "failed": writing now would be a side effect nobody sees.
      ctx.signal.throwIfAborted();
      const [memory]: MemoryRow[] = await m.query(
        `INSERT INTO agent_memory (id, org_id, agent_id, content, tags) VALUES ($1, $2, $3, $4, $5::text[]) RETURNING id, content, tags, created_at`,
        [randomUUID(), ctx.orgId, ctx.agentId, content, tags],
      );
      return { kind: 'created' as const, memory, count: count + 1 };
    });
  }

  /** The forgotten memory, or undefined when the agent keeps none with that id. */
  async forget(ctx: ToolContext, memoryId: string): Promise<MemoryRow | undefined> {
    ctx.signal.throwIfAborted();
    const [rows]: [MemoryRow[], number] = await this.dataSource.query(
      `DELETE FROM agent_memory WHERE org_id = $1 AND agent_id = $2 AND id = $3 RETURNING id, content, tags, created_at`,
      [ctx.orgId, ctx.agentId, memoryId],
    );
    return rows[0];
  }
}
