import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * MCP connections: an organization's use of a catalog entry (its URL when the entry lets it
 * choose, its sealed credentials, the tools the server last listed, the admins' risk decisions),
 * and which published versions bind which connection (immutable, like the version itself).
 */
export class McpConnections1764510000000 implements MigrationInterface {
  name = 'McpConnections1764510000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mcp_connection (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org (id),
        server text NOT NULL,
        name text NOT NULL,
        url text,
        credentials text,
        credential_names text[] NOT NULL DEFAULT '{}',
        status text NOT NULL CHECK (status IN ('ready', 'error')),
        error jsonb,
        tools jsonb NOT NULL DEFAULT '[]',
        risk_overrides jsonb NOT NULL DEFAULT '{}',
        synced_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (org_id, name),
        UNIQUE (org_id, id)
      )`);
    await q.query(`CREATE INDEX mcp_connection_list_idx ON mcp_connection (org_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE agent_version_mcp_connection (
        org_id uuid NOT NULL,
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        connection_id uuid NOT NULL,
        PRIMARY KEY (agent_id, version, connection_id),
        FOREIGN KEY (agent_id, version) REFERENCES agent_version (agent_id, version),
        FOREIGN KEY (org_id, connection_id) REFERENCES mcp_connection (org_id, id)
      )`);
    await q.query(`CREATE INDEX agent_version_mcp_connection_idx ON agent_version_mcp_connection (org_id, connection_id)`);
    await q.query(`
      CREATE TRIGGER agent_version_mcp_connection_no_change BEFORE UPDATE OR DELETE ON agent_version_mcp_connection
      FOR EACH ROW EXECUTE FUNCTION agent_version_immutable()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_version_mcp_connection`);
    await q.query(`DROP TABLE mcp_connection`);
  }
}
