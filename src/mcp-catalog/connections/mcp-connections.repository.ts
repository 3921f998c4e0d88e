import { Injectable } from '@nestjs/common';
import { hash } from 'node:crypto';
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
  /** As answers show it (src/common/url-secrets.ts); the URL itself is `url_sealed` when that is set. */
  url: string | null;
  /** The URL, sealed, when it holds more than `url` shows (a token in its query). */
  url_sealed: string | null;
  /** Sealed JSON object of credential values, or null. */
  credentials: string | null;
  credential_names: string[];
  status: 'ready' | 'error';
  error: { code: string; message: string } | null;
  tools: ListedMcpTool[];
  /** SHA-256 of the stored list's JSON text: changes whenever the list does (StoredToolLists keeps lists by it). */
  tools_digest: string;
  /** The stored list's size in bytes (a generated column): what a version's bound lists weigh, known without reading them. */
  tools_bytes: number;
  risk_overrides: Record<string, ToolRisk>;
  synced_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** A connection without its tool list, which is up to 4 MiB of JSON: what a call needs of it. */
export type McpConnectionSummary = Omit<McpConnectionRow, 'tools'>;

const SUMMARY_COLUMNS =
  'id, org_id, server, name, url, url_sealed, credentials, credential_names, status, error, tools_digest, tools_bytes, risk_overrides, synced_at, created_at, updated_at';

type Db = DataSource | EntityManager;

/** The address a tool list was asked for at, as the row stored it. */
export type ListedAt = Pick<McpConnectionRow, 'url' | 'url_sealed'>;

/** The mcp_connection table. Every method takes the organization first: no query can forget it. */
@Injectable()
export class McpConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(
    db: Db,
    orgId: string,
    row: Pick<McpConnectionRow, 'id' | 'server' | 'name' | 'url' | 'url_sealed' | 'credentials' | 'credential_names' | 'tools'>,
  ): Promise<McpConnectionRow> {
    const tools = storedList(row.tools);
    const [inserted]: McpConnectionRow[] = await db.query(
      `INSERT INTO mcp_connection (id, org_id, server, name, url, url_sealed, credentials, credential_names, status, tools, tools_digest, synced_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'ready', $9::jsonb, $10, now()) RETURNING *`,
      [row.id, orgId, row.server, row.name, row.url, row.url_sealed, row.credentials, row.credential_names, tools.json, tools.digest],
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
        bytes: ['w.tools_bytes', 'w.risk_overrides_bytes', 'w.error_bytes', 'octet_length(w.credentials)', 'octet_length(w.url_sealed)'],
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

  /** The connections among `ids` that exist in the organization, without their tool lists. */
  async getSummaries(orgId: string, ids: readonly string[]): Promise<McpConnectionSummary[]> {
    if (ids.length === 0) return [];
    return this.dataSource.query(`SELECT ${SUMMARY_COLUMNS} FROM mcp_connection WHERE org_id = $1 AND id = ANY($2::uuid[])`, [orgId, ids]);
  }

  async getSummary(orgId: string, id: string): Promise<McpConnectionSummary | undefined> {
    const [row]: McpConnectionSummary[] = await this.dataSource.query(`SELECT ${SUMMARY_COLUMNS} FROM mcp_connection WHERE org_id = $1 AND id = $2`, [
      orgId,
      id,
    ]);
    return row;
  }

  /** A connection's tool list as its JSON text, and that list's digest (read together: they always match). */
  async getTools(orgId: string, id: string): Promise<{ json: string; digest: string } | undefined> {
    const [row]: { json: string; digest: string }[] = await this.dataSource.query(
      `SELECT tools::text AS json, tools_digest AS digest FROM mcp_connection WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    return row;
  }

  /**
   * A refresh's tools, stored only while the connection is still at the address they were listed
   * at (`at`): a list from the old address, arriving after a move, is not the connection's.
   */
  async saveTools(db: Db, orgId: string, id: string, at: ListedAt, listed: ListedMcpTool[]): Promise<McpConnectionRow | undefined> {
    const tools = storedList(listed);
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET tools = $5::jsonb, tools_digest = $6, status = 'ready', error = NULL, synced_at = now(), updated_at = now()
       WHERE org_id = $1 AND id = $2 AND url IS NOT DISTINCT FROM $3 AND url_sealed IS NOT DISTINCT FROM $4 RETURNING *`,
      [orgId, id, at.url, at.url_sealed, tools.json, tools.digest],
    );
    return row;
  }

  /** A refresh's failure, recorded only while the connection is still at the address it failed at (as saveTools). */
  async saveError(db: Db, orgId: string, id: string, at: ListedAt, error: { code: string; message: string }): Promise<McpConnectionRow | undefined> {
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET status = 'error', error = $5::jsonb, updated_at = now()
       WHERE org_id = $1 AND id = $2 AND url IS NOT DISTINCT FROM $3 AND url_sealed IS NOT DISTINCT FROM $4 RETURNING *`,
      [orgId, id, at.url, at.url_sealed, JSON.stringify(error)],
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

  /** Moves the connection to another URL with the tools listed there, as a sync stores them. */
  async setUrl(
    db: Db,
    orgId: string,
    id: string,
    url: { shown: string; sealed: string | null },
    listed: ListedMcpTool[],
  ): Promise<McpConnectionRow | undefined> {
    const tools = storedList(listed);
    const [[row]]: [McpConnectionRow[], number] = await db.query(
      `UPDATE mcp_connection SET url = $3, url_sealed = $4, tools = $5::jsonb, tools_digest = $6, status = 'ready', error = NULL, synced_at = now(), updated_at = now()
       WHERE org_id = $1 AND id = $2 RETURNING *`,
      [orgId, id, url.shown, url.sealed, tools.json, tools.digest],
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

function storedList(tools: ListedMcpTool[]): { json: string; digest: string } {
  const json = JSON.stringify(tools);
  return { json, digest: hash('sha256', json, 'hex') };
}
