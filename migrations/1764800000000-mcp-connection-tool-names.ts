import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The names of a connection's tools, kept beside its list (up to 4 MiB) as the list is written.
 * `GET /tools/disabled` says of each switch whether the connection it names lists a tool of that
 * name, and read each named connection's whole list for it: 48 connections of 4 MiB lists and 150
 * switches took 47 to 103 ms a page, and four readers at once moved another organization's
 * `GET /agents` from 10 to 33 ms (attack round 15, Q-N1). Adding a stored column rewrites the
 * table once (at most 50 connections an organization).
 */
export class McpConnectionToolNames1764800000000 implements MigrationInterface {
  name = 'McpConnectionToolNames1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection ADD COLUMN tool_names jsonb GENERATED ALWAYS AS (jsonb_path_query_array(tools, '$[*].name')) STORED`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp_connection DROP COLUMN tool_names`);
  }
}
