import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../../../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../../../config/database-config';
import type { ToolContext } from '../../capability.types';
import { PROXIMITY_CANDIDATES, proximityRank, searchTerms, searchTurns } from '../../../database/text-search';
import { OrgGate } from '../../../common/org-gate';

export interface MemoryRow {
  id: string;
  content: string;
  tags: string[];
  created_at: Date;
  rank?: number;
}

export type RememberOutcome =
  | { kind: 'created'; memory: MemoryRow; count: number }
  | { kind: 'existing'; memory: MemoryRow }
  | { kind: 'full'; count: number }
  | { kind: 'storage_full'; stored: number; adding: number; max: number }
  | { kind: 'no_agent' };

/**
 * The `agent_memory` table, shared by `memory` (reads) and `memory-write` (writes). Every
 * statement is bounded by the organization and the agent of the calling tool: memories are per
 * agent, per organization, and nothing here takes either from anywhere else.
 */
@Injectable()
export class MemoryRepository {
  /** MEMORY_MAX_BYTES_PER_ORG: what the organization's memories may weigh (migration 1764820000000). */
  private readonly maxBytes: number;
  /** An organization's recalls take their turns with its knowledge searches: a quarter of the pool at most (attack round 16, T-F2). */
  private readonly searches: OrgGate;
  /**
   * An organization's memory writes, one at a time on the node before they take a connection: each
   * waits for the agent's row and the organization's weight (a row its triggers update), held until
   * its call settles, and 128 approvals at once held 9 of 10 connections waiting (attack round 21, AE-F1).
   */
  private readonly writes = new OrgGate(1);

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxBytes = config.storage?.memoryBytesPerOrg ?? DEFAULT_STORAGE_LIMITS.memoryBytesPerOrg!;
    this.searches = searchTurns(dataSource, config.databasePoolSize);
  }

  /**
   * Best match first. Empty when the query has no searchable words. Ranked as
   * src/database/text-search.ts says: ranked as asked over every match, a query of 120 words took
   * 0.33 ms a memory of 2,000 characters (33 s for an agent keeping 100,000), against 0.04 ms by
   * any of its words. In the organization's turns of full-text searches (searchTurns): the time
   * still grows with the agent's memories, 1.7 s at 100,000.
   */
  async search(ctx: ToolContext, query: string, limit: number): Promise<MemoryRow[]> {
    return this.searches.run(ctx.orgId, () => this.recallIn(ctx, query, limit), ctx.signal);
  }

  private recallIn(ctx: ToolContext, query: string, limit: number): Promise<MemoryRow[]> {
    return this.dataSource.query(
      `SELECT cand.id, cand.content, cand.tags, cand.created_at, ${proximityRank('cand.search', 'cand', 0)} AS rank
         FROM (
           SELECT m.id, m.content, m.tags, m.created_at, m.search, q.query, q.marks, q.words
             FROM agent_memory m, ${searchTerms('$3', 'q')}
            WHERE m.org_id = $1 AND m.agent_id = $2 AND m.search @@ q.query
            ORDER BY ts_rank(m.search, q.marks, 0) DESC, m.created_at DESC, m.id
            LIMIT ${PROXIMITY_CANDIDATES}
         ) cand
        ORDER BY rank DESC, cand.created_at DESC, cand.id
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
   * agent count one after the other and the limit holds; the look for the same text, the count
   * and the insert are then one statement (its snapshot is taken after the lock was granted, so it
   * sees what the previous holder committed): two statements in the call's transaction, which
   * the call's settlement commits (the lock is held until then).
   */
  async remember(ctx: ToolContext, content: string, tags: readonly string[], max: number): Promise<RememberOutcome> {
    // The effect's transaction commits with the call's outcome: past the deadline it is refused,
    // or rolled back at the check below; once it may commit, the call reports what it did.
    return this.writes.run(ctx.orgId, () => ctx.effect((m) => this.rememberIn(m, ctx, content, tags, max)), ctx.signal);
  }

  private async rememberIn(m: EntityManager, ctx: ToolContext, content: string, tags: readonly string[], max: number): Promise<RememberOutcome> {
    const agent: unknown[] = await m.query(`SELECT 1 FROM agent WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`, [ctx.orgId, ctx.agentId]);
    if (agent.length === 0) return { kind: 'no_agent' as const };
    // The organization's memories are weighed in turn (MEMORY_MAX_BYTES_PER_ORG), so two agents'
    // memories kept at once cannot pass the bound together; always after the agent's row, as here.
    await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('agent_memory:' || $1::text, 0))`, [ctx.orgId]);
    // Past the timeout the executor has already answered "failed": writing now would be a side effect nobody sees.
    ctx.signal.throwIfAborted();
    const [row]: (MemoryRow & { kind: 'created' | 'existing' | 'full' | 'storage_full'; n: number; stored: string; adding: string })[] = await m.query(
      `WITH existing AS (
         SELECT id, content, tags, created_at FROM agent_memory
          WHERE org_id = $1::uuid AND agent_id = $2::uuid AND content = $3::text ORDER BY created_at LIMIT 1
       ), kept AS (
         SELECT count(*)::integer AS n FROM agent_memory WHERE org_id = $1::uuid AND agent_id = $2::uuid
       ), weight AS (
         SELECT coalesce((SELECT bytes FROM memory_usage WHERE org_id = $1::uuid), 0) AS stored,
                agent_memory_weight($3::text, $5::text[],
                  setweight(to_tsvector('english'::regconfig, agent_memory_tags_text($5::text[])), 'A') ||
                  setweight(to_tsvector('english'::regconfig, $3::text), 'B')) AS adding
       ), room AS (
         SELECT (SELECT n FROM kept) < $6::integer AS count_ok, w.stored + w.adding <= $7::bigint AS bytes_ok FROM weight w
       ), created AS (
         INSERT INTO agent_memory (id, org_id, agent_id, content, tags)
         SELECT $4::uuid, $1::uuid, $2::uuid, $3::text, $5::text[]
          WHERE NOT EXISTS (SELECT 1 FROM existing) AND (SELECT count_ok AND bytes_ok FROM room)
         RETURNING id, content, tags, created_at
       )
       SELECT 'created' AS kind, c.id, c.content, c.tags, c.created_at, (SELECT n FROM kept) + 1 AS n, NULL AS stored, NULL AS adding FROM created c
       UNION ALL SELECT 'existing', e.id, e.content, e.tags, e.created_at, NULL, NULL, NULL FROM existing e
       UNION ALL SELECT 'full', NULL, NULL, NULL, NULL, k.n, NULL, NULL FROM kept k, room r WHERE NOT EXISTS (SELECT 1 FROM existing) AND NOT r.count_ok
       UNION ALL SELECT 'storage_full', NULL, NULL, NULL, NULL, NULL, w.stored::text, w.adding::text FROM weight w, room r
        WHERE NOT EXISTS (SELECT 1 FROM existing) AND r.count_ok AND NOT r.bytes_ok`,
      [ctx.orgId, ctx.agentId, content, randomUUID(), tags, max, this.maxBytes],
    );
    const { kind, n, stored, adding, ...memory } = row;
    if (kind === 'existing') return { kind, memory };
    if (kind === 'full') return { kind, count: n };
    if (kind === 'storage_full') return { kind, stored: Number(stored), adding: Number(adding), max: this.maxBytes };
    return { kind, memory, count: n };
  }

  /** The forgotten memory, or undefined when the agent keeps none with that id. */
  async forget(ctx: ToolContext, memoryId: string): Promise<MemoryRow | undefined> {
    // Refused past the deadline; once sent, it commits with the call's outcome.
    const forget = () =>
      ctx.effect((m) => {
        ctx.signal.throwIfAborted();
        return m.query(`DELETE FROM agent_memory WHERE org_id = $1 AND agent_id = $2 AND id = $3 RETURNING id, content, tags, created_at`, [
          ctx.orgId,
          ctx.agentId,
          memoryId,
        ]);
      });
    const [rows]: [MemoryRow[], number] = await this.writes.run(ctx.orgId, forget, ctx.signal);
    return rows[0];
  }
}
