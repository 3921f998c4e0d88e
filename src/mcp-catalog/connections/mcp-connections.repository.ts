import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { ToolRisk } from '../../capabilities/capability.types';
import { Page, PageQuery } from '../../common/pagination';
import { newestFirstPage } from '../../database/keyset-page';
import type { ListedMcpTool } from './mcp-tools';

export interface McpConnectionRow {
  id: string;
  org_id: string;
  server: string;
  name: string;
  url: string | null;
  /** Sealed JSON object of credential values, or null. */
  credentials: string | null;
  credential_names: string[];
  status: 'ready' | 'error';
  error: { code: string; message: string } | null;
  tools: ListedMcpTool[];
  risk_overrides: Record<string, ToolRisk>;
  synced_at: Date;
  created_at: Date;
  updated_at: Date;
}

type Db = DataSource | EntityManager;

/** The mcp_connection table. Every method takes the organization first: no query can forget it. */
@Injectable()
export class McpConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(
    db: Db,
    orgId: string,
    row: Pick<McpConnectionRow, 'id' | 'server' | 'name' | 'url' | 'credentials' | 'credential_names' | 'tools'>,
  ): Promise<McpConnectionRow> {
    const [inserted]: McpConnectionRow[] = await db.query(
      `INSERT INTO mcp_connection (id, org_id, server, name, url, credentials, credential_names, status, tools, synced_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'ready', $8::jsonb, now()) RETURNING *`,
      [row.id, orgId, row.server, row.name, row.url, row.credentials, row.credential_names, JSON.stringify(row.tools)],
    );
    return inserted;
  }

  list(orgId: string, query: PageQuery): Promise<Page<McpConnectionRow>> {
    return newestFirstPage<McpConnectionRow, McpConnectionRow>(
      this.dataSource,
      {
        select: 'SELECT * FROM mcp_connection',
        where: 'org_id = $1',
        params: [orgId],
        // Tools as their server listed them (up to MAX_LIST_CHARS), and the sealed credentials read with them.
        bytes: ['w.tools_bytes', 'w.risk_overrides_bytes', 'w.error_bytes', 'octet_length(w.credentials)'],
      },
      query,
      (r) => r,
    );
  }

  async get(orgId: string, id: string, db: Db = this.dataSource, lock = false): Promise<McpConnectionRow | undefined> {
    const [row]: McpConnectionRow[] = await db.query(`SELECT * FROM mcp_connection WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [orgId, id]);
    return row;
  }

  async getByName(orgId: string, name: string): Promise<McpConnectionRow | undefined> {
    const [row]: McpConnectionRow[] = await this.dataSource.query(`SELECT * FROM mcp_connection WHERE org_id = $1 AND name = $2`, [orgId, name]);
    return row;
  }

  /** The connections among `ids` that exist in the organization. */
  async getMany(orgId: string, ids: readonly string[], db: Db = this.dataSource): Promise<McpConnectionRow[]> {
    if (ids.length === 0) return [];
    return db.query(`SELECT * FROM mcp_connection WHERE org_id = $1 AND id = ANY($2::uuid[])`, [orgId, ids]);
  }

  async saveTools(db: Db, orgId: string, id: string, tools: ListedMcpTool[]): Promise<McpConnectionRow | undefined> {
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET tools = $3::jsonb, status = 'ready', error = NULL, synced_at = now(), updated_at = now()
       WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, id, JSON.stringify(tools)],
    );
    return row;
  }

  async saveError(db: Db, orgId: string, id: string, error: { code: string; message: string }): Promise<McpConnectionRow | undefined> {
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET status = 'error', error = $3::jsonb, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, id, JSON.stringify(error)],
    );
    return row;
  }

  async setRisk(db: Db, orgId: string, id: string, tool: string, risk: ToolRisk): Promise<McpConnectionRow | undefined> {
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET risk_overrides = risk_overrides || jsonb_build_object($3::text, $4::text), updated_at = now()
       WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, id, tool, risk],
    );
    return row;
  }

  async setCredentials(db: Db, orgId: string, id: string, sealed: string | null, names: string[]): Promise<McpConnectionRow | undefined> {
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET credentials = $3, credential_names = $4, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, id, sealed, names],
    );
    return row;
  }

  /** Published versions that bind the connection (at most 20, for the refusal's `boundBy`). */
  async boundBy(db: Db, orgId: string, id: string): Promise<{ agent_id: string; version: number }[]> {
    return db.query(`SELECT agent_id, version FROM agent_version_mcp_connection WHERE org_id = $1 AND connection_id = $2 ORDER BY agent_id, version LIMIT 20`, [
      orgId,
      id,
    ]);
  }

  async delete(db: Db, orgId: string, id: string): Promise<void> {
    await db.query(`DELETE FROM mcp_connection WHERE org_id = $1 AND id = $2`, [orgId, id]);
  }
}
