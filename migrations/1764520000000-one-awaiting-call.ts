import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One call awaited by its requester per (key, agent, version, tool, arguments): an MCP client
 * that asks again for a call needing approval waits on the first one (docs/mcp.md). Two identical
 * requests at once both found none and both inserted, so one call had two approvals and could run
 * twice. The index makes the second insert fail; the executor then resumes the first.
 */
export class OneAwaitingCall1764520000000 implements MigrationInterface {
  name = 'OneAwaitingCall1764520000000';

  async up(q: QueryRunner): Promise<void> {
    // Duplicates the race already made: the newest stays awaited, the others stay in the inbox.
    await q.query(`
      UPDATE tool_call c SET awaiting_requester = false
       WHERE c.awaiting_requester
         AND EXISTS (SELECT 1 FROM tool_call n
                      WHERE n.awaiting_requester AND n.org_id = c.org_id AND n.agent_id = c.agent_id
                        AND n.requested_by = c.requested_by AND n.arguments_hash = c.arguments_hash
                        AND n.version = c.version AND n.capability_id = c.capability_id AND n.tool_id = c.tool_id
                        AND (n.created_at, n.id) > (c.created_at, c.id))`);
    await q.query(`DROP INDEX tool_call_awaiting_idx`);
    await q.query(`
      CREATE UNIQUE INDEX tool_call_awaiting_key ON tool_call (org_id, agent_id, requested_by, arguments_hash, version, capability_id, tool_id)
       WHERE awaiting_requester`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX tool_call_awaiting_key`);
    await q.query(`CREATE INDEX tool_call_awaiting_idx ON tool_call (org_id, agent_id, requested_by, arguments_hash) WHERE awaiting_requester`);
  }
}
