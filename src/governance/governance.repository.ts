import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error';
import { GovernanceFacts, toolKey } from '../runtime/tool-policy';

export interface RetirementRow {
  version: number;
  retired_at: Date;
  retired_by: string;
}

export interface DisabledToolRow {
  capability_id: string;
  tool_id: string;
  reason: string | null;
  disabled_at: Date;
  disabled_by: string;
}

/**
 * The most tools one organization may have disabled at once: incident response, not an allow-list.
 * An MCP tool's switch names any tool id shaped like one (the connection's tools may change), so
 * without a bound one admin key planted 3,000 invented switches of 2.5 KB each (attack round 8).
 */
export const MAX_DISABLED_TOOLS = 1000;

/**
 * The lock an organization's switches serialize with the approvals it decides, held to the end of
 * `m`'s transaction. A switch (disabling a tool, retiring a version) takes it alone; an approving
 * decision takes it shared, then reads the switches in its next statement: a decision either
 * commits before a switch, or waits for it and sees it. Read apart from the decision, the switches
 * let a decision that read them just before a disable commit after it and run the tool. The first
 * lock of any transaction that takes it (docs/architecture.md "Lock order").
 */
export async function holdSwitches(m: Pick<EntityManager, 'query'>, orgId: string, as: 'switch' | 'decision'): Promise<void> {
  const lock = as === 'switch' ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared';
  await m.query(`SELECT ${lock}(hashtextextended('governance:' || $1::text, 0))`, [orgId]);
}

/**
 * The two incident-response switches of an organization: versions retired, tools disabled. Every
 * method takes the organization first (STYLE.md 7). What they decide is read by the tool policy
 * at every entry point (see src/tool-calls/README.md); nothing here runs a tool.
 */
@Injectable()
export class GovernanceRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The switches that decide whether one tool of one version may run now, in one query. */
  async factsFor(orgId: string, agentId: string, version: number, capabilityId: string, toolId: string): Promise<GovernanceFacts> {
    const [row]: { retired: boolean; reason: string | null; disabled: boolean }[] = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM agent_version_retirement WHERE org_id = $1 AND agent_id = $2 AND version = $3) AS retired,
              d.reason, d.tool_id IS NOT NULL AS disabled
         FROM (SELECT 1) one
         LEFT JOIN tool_disabled d ON d.org_id = $1 AND d.capability_id = $4 AND d.tool_id = $5`,
      [orgId, agentId, version, capabilityId, toolId],
    );
    return {
      versionRetired: row.retired,
      disabledTools: row.disabled ? new Map([[toolKey(capabilityId, toolId), { reason: row.reason }]]) : new Map(),
    };
  }

  /** The switches of the given tools of one version (MCP's tools/list filters with them). */
  async factsForVersion(orgId: string, agentId: string, version: number, tools: readonly { capabilityId: string; toolId: string }[]): Promise<GovernanceFacts> {
    const [retired, rows] = await Promise.all([
      this.retirementOf(orgId, agentId, version),
      this.dataSource.query(
        `SELECT d.capability_id, d.tool_id, d.reason FROM tool_disabled d
           JOIN unnest($2::text[], $3::text[]) AS t(capability_id, tool_id) ON t.capability_id = d.capability_id AND t.tool_id = d.tool_id
          WHERE d.org_id = $1`,
        [orgId, tools.map((t) => t.capabilityId), tools.map((t) => t.toolId)],
      ) as Promise<Pick<DisabledToolRow, 'capability_id' | 'tool_id' | 'reason'>[]>,
    ]);
    return { versionRetired: retired !== undefined, disabledTools: new Map(rows.map((r) => [toolKey(r.capability_id, r.tool_id), { reason: r.reason }])) };
  }

  /**
   * The retirements of these versions of the agent (a page of its versions). Every retirement of
   * the agent was read for each page: one with 100,000 versions retired (a builder key publishes
   * and retires some 400 a minute) made `GET /versions?limit=1` read them all, 0.7 s of the node's
   * event loop, and another organization's reads waited behind it (attack round 15, Q-F1).
   */
  async retirementsOf(
    orgId: string,
    agentId: string,
    versions: readonly number[],
    manager: EntityManager | DataSource = this.dataSource,
  ): Promise<Map<number, RetirementRow>> {
    if (versions.length === 0) return new Map();
    const rows: RetirementRow[] = await manager.query(
      `SELECT version, retired_at, retired_by FROM agent_version_retirement WHERE org_id = $1 AND agent_id = $2 AND version = ANY($3::integer[])`,
      [orgId, agentId, versions],
    );
    return new Map(rows.map((r) => [r.version, r]));
  }

  async retirementOf(
    orgId: string,
    agentId: string,
    version: number,
    manager: EntityManager | DataSource = this.dataSource,
  ): Promise<RetirementRow | undefined> {
    const rows: RetirementRow[] = await manager.query(
      `SELECT version, retired_at, retired_by FROM agent_version_retirement WHERE org_id = $1 AND agent_id = $2 AND version = $3`,
      [orgId, agentId, version],
    );
    return rows[0];
  }

  /** Inserts the retirement unless there is one; answers the retirement as it stands. */
  async retire(manager: EntityManager, orgId: string, agentId: string, version: number, by: string): Promise<{ row: RetirementRow; created: boolean }> {
    const inserted: RetirementRow[] = await manager.query(
      `INSERT INTO agent_version_retirement (org_id, agent_id, version, retired_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (agent_id, version) DO NOTHING
       RETURNING version, retired_at, retired_by`,
      [orgId, agentId, version, by],
    );
    if (inserted[0]) return { row: inserted[0], created: true };
    return { row: (await this.retirementOf(orgId, agentId, version, manager))!, created: false };
  }

  async disabledTools(orgId: string, manager: EntityManager | DataSource = this.dataSource): Promise<Map<string, DisabledToolRow>> {
    const rows: DisabledToolRow[] = await manager.query(
      `SELECT capability_id, tool_id, reason, disabled_at, disabled_by FROM tool_disabled WHERE org_id = $1 ORDER BY capability_id, tool_id`,
      [orgId],
    );
    return new Map(rows.map((r) => [toolKey(r.capability_id, r.tool_id), r]));
  }

  /**
   * One page of the organization's switches after `after`, in code point order (`COLLATE "C"`, the
   * same whatever the database's collation, so a cursor means the same on every node): the page's
   * rows only, where reading every switch (up to 1,000, over a megabyte with their reasons) for
   * each page took 13 to 20 ms.
   */
  async disabledToolsPage(orgId: string, after: [string, string] | undefined, limit: number): Promise<DisabledToolRow[]> {
    return this.dataSource.query(
      `SELECT capability_id, tool_id, reason, disabled_at, disabled_by FROM tool_disabled
        WHERE org_id = $1 AND ($2::text IS NULL OR (capability_id COLLATE "C", tool_id COLLATE "C") > ($2::text COLLATE "C", $3::text COLLATE "C"))
        ORDER BY capability_id COLLATE "C", tool_id COLLATE "C" LIMIT $4`,
      [orgId, after?.[0] ?? null, after?.[1] ?? null, limit],
    );
  }

  async disabledTool(
    orgId: string,
    capabilityId: string,
    toolId: string,
    manager: EntityManager | DataSource = this.dataSource,
  ): Promise<DisabledToolRow | undefined> {
    const rows: DisabledToolRow[] = await manager.query(
      `SELECT capability_id, tool_id, reason, disabled_at, disabled_by FROM tool_disabled WHERE org_id = $1 AND capability_id = $2 AND tool_id = $3`,
      [orgId, capabilityId, toolId],
    );
    return rows[0];
  }

  /**
   * Disables a tool, or changes the reason it is disabled for (then `disabledBy` is who gave the
   * reason now shown; `disabledAt` stays when it was switched off). `change` says which happened,
   * none when it was already disabled for that very reason.
   */
  async disable(
    manager: EntityManager,
    orgId: string,
    capabilityId: string,
    toolId: string,
    reason: string | null,
    by: string,
  ): Promise<{ row: DisabledToolRow; change?: 'disabled' | 'reason'; previousReason?: string | null }> {
    // Counted under the switches' lock the caller holds (holdSwitches), so two at once cannot pass it.
    const [{ n, there }]: { n: number; there: boolean | null }[] = await manager.query(
      `SELECT count(*)::int AS n, bool_or(capability_id = $2 AND tool_id = $3) AS there FROM tool_disabled WHERE org_id = $1`,
      [orgId, capabilityId, toolId],
    );
    if (!there && n >= MAX_DISABLED_TOOLS) {
      throw ApiError.conflict(`This organization has ${n} tools disabled, the most it may (${MAX_DISABLED_TOOLS}); enable some first.`);
    }
    // Inserted, or else the row there is locked and read, in a statement of its own: of two admins
    // switching it at once, the second sees the first's reason (an upsert's snapshot did not).
    for (;;) {
      const inserted: DisabledToolRow[] = await manager.query(
        `INSERT INTO tool_disabled (org_id, capability_id, tool_id, reason, disabled_by) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (org_id, capability_id, tool_id) DO NOTHING
         RETURNING capability_id, tool_id, reason, disabled_at, disabled_by`,
        [orgId, capabilityId, toolId, reason, by],
      );
      if (inserted.length > 0) return { row: inserted[0], change: 'disabled' };
      const prior: { reason: string | null }[] = await manager.query(
        `SELECT reason FROM tool_disabled WHERE org_id = $1 AND capability_id = $2 AND tool_id = $3 FOR UPDATE`,
        [orgId, capabilityId, toolId],
      );
      // Enabled again in between: insert again.
      if (prior.length === 0) continue;
      if (prior[0].reason === reason) return { row: (await this.disabledTool(orgId, capabilityId, toolId, manager))! };
      const updated: DisabledToolRow[] = await manager.query(
        `UPDATE tool_disabled SET reason = $4, disabled_by = $5 WHERE org_id = $1 AND capability_id = $2 AND tool_id = $3
         RETURNING capability_id, tool_id, reason, disabled_at, disabled_by`,
        [orgId, capabilityId, toolId, reason, by],
      );
      // TypeORM answers an UPDATE ... RETURNING as [rows, count].
      const rows = (Array.isArray(updated[0]) ? updated[0] : updated) as DisabledToolRow[];
      return { row: rows[0], change: 'reason', previousReason: prior[0].reason };
    }
  }

  /**
   * Which of these MCP tool ids (`<connection>/<tool>`) a connection of the organization lists now,
   * by exact name: a switch on a look-alike name (a zero-width or homoglyph character) stops
   * nothing, and its answer says so. One statement for a page, which reads the named connections'
   * tool names (`tool_names`, kept beside each list as it is written), not their lists (up to 4 MiB
   * each: 47 to 103 ms a page at 48 of them, attack round 15, Q-N1).
   */
  async listedMcpTools(orgId: string, toolIds: readonly string[], db: Pick<EntityManager, 'query'> = this.dataSource): Promise<Set<string>> {
    if (toolIds.length === 0) return new Set();
    const connections = [...new Set(toolIds.map((id) => id.slice(0, id.indexOf('/'))))];
    const tools = [...new Set(toolIds.map((id) => id.slice(id.indexOf('/') + 1)))];
    const rows: { connection: string; tool: string }[] = await db.query(
      `SELECT c.name AS connection, w.tool
         FROM mcp_connection c, unnest($3::text[]) AS w(tool)
        WHERE c.org_id = $1 AND c.name = ANY($2::text[]) AND c.tool_names @> jsonb_build_array(w.tool)`,
      [orgId, connections, tools],
    );
    const listed = new Set(rows.map((r) => `${r.connection}/${r.tool}`));
    return new Set(toolIds.filter((id) => listed.has(id)));
  }

  /** Enables a tool; true when it was disabled. */
  async enable(manager: EntityManager, orgId: string, capabilityId: string, toolId: string): Promise<boolean> {
    const result: unknown[] = await manager.query(`DELETE FROM tool_disabled WHERE org_id = $1 AND capability_id = $2 AND tool_id = $3 RETURNING tool_id`, [
      orgId,
      capabilityId,
      toolId,
    ]);
    // TypeORM answers a DELETE ... RETURNING as [rows, count].
    const rows = Array.isArray(result[0]) ? (result[0] as unknown[]) : result;
    return rows.length > 0;
  }
}
