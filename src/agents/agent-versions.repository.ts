import type { DataSource, EntityManager } from 'typeorm';
import { BudgetedRows, rowsWithinBudget } from '../database/keyset-page';
import type { AgentSpec } from './built-version';
import type { VersionRow } from './version-builder.service';

type Queryable = Pick<DataSource, 'query'>;

/**
 * The writes and reads of `agent_version` (with `agent_version_resource` and
 * `agent_version_mcp_connection`) that publish, the versions list and governance make, each
 * inside the caller's transaction, hence functions over its manager. The version store
 * (version-store.service.ts, the loading hot path) still reads the table itself.
 */
export async function findVersion(m: Queryable, orgId: string, agentId: string, version: number): Promise<VersionRow | undefined> {
  const [row]: VersionRow[] = await m.query(`SELECT * FROM agent_version WHERE org_id = $1 AND agent_id = $2 AND version = $3`, [orgId, agentId, version]);
  return row;
}

export async function versionExists(m: Queryable, orgId: string, agentId: string, version: number): Promise<boolean> {
  const found: unknown[] = await m.query(`SELECT 1 FROM agent_version WHERE org_id = $1 AND agent_id = $2 AND version = $3`, [orgId, agentId, version]);
  return found.length > 0;
}

/** A version with what it binds: collections, skills and MCP connections (a bound one cannot be deleted). */
export async function insertVersion(
  m: EntityManager,
  orgId: string,
  v: {
    agentId: string;
    version: number;
    spec: AgentSpec;
    specHash: string;
    toolDigests: Record<string, string>;
    toolSources: Record<string, string>;
    contentHash: string;
    publishedBy: string;
    collections: string[];
    skills: string[];
    connections: string[];
  },
): Promise<VersionRow> {
  const [row]: VersionRow[] = await m.query(
    `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, tool_sources, content_hash, published_by)
     VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7::jsonb, $8, $9) RETURNING *`,
    [
      orgId,
      v.agentId,
      v.version,
      JSON.stringify(v.spec),
      v.specHash,
      JSON.stringify(v.toolDigests),
      JSON.stringify(v.toolSources),
      v.contentHash,
      v.publishedBy,
    ],
  );
  for (const id of v.collections) {
    await m.query(`INSERT INTO agent_version_resource (org_id, agent_id, version, collection_id) VALUES ($1, $2, $3, $4)`, [orgId, v.agentId, v.version, id]);
  }
  for (const id of v.skills) {
    await m.query(`INSERT INTO agent_version_resource (org_id, agent_id, version, skill_id) VALUES ($1, $2, $3, $4)`, [orgId, v.agentId, v.version, id]);
  }
  if (v.connections.length > 0) {
    await m.query(`INSERT INTO agent_version_mcp_connection (org_id, agent_id, version, connection_id) SELECT $1, $2, $3, unnest($4::uuid[])`, [
      orgId,
      v.agentId,
      v.version,
      v.connections,
    ]);
  }
  return row;
}

/** Newest first, below `beforeVersion` when given; a spec is as large as the draft it was, so the page ends at the byte budget. */
export function listVersions(
  db: Queryable,
  orgId: string,
  agentId: string,
  beforeVersion: number | undefined,
  limit: number,
): Promise<BudgetedRows<VersionRow>> {
  const params: unknown[] = [orgId, agentId, limit];
  if (beforeVersion !== undefined) params.push(beforeVersion);
  return rowsWithinBudget(db, {
    text: `SELECT * FROM agent_version WHERE org_id = $1 AND agent_id = $2 ${beforeVersion !== undefined ? 'AND version < $4' : ''} ORDER BY version DESC LIMIT $3`,
    params,
    order: 'version DESC',
    bytes: ['w.spec_bytes', 'w.tool_digests_bytes'],
  });
}

/**
 * Which of these resources still exist, held FOR KEY SHARE until the publish commits, so that a
 * delete waits and then sees the binding. Reads the resources' own tables for their ids only.
 */
export async function lockExisting(
  m: Queryable,
  table: 'knowledge_collection' | 'skill' | 'mcp_connection',
  orgId: string,
  ids: string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows: { id: string }[] = await m.query(`SELECT id FROM ${table} WHERE org_id = $1 AND id = ANY($2::uuid[]) FOR KEY SHARE`, [orgId, ids]);
  return new Set(rows.map((r) => r.id));
}
