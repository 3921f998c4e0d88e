import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { EXPIRED_MESSAGE, INTERRUPTED_MESSAGE, INTERRUPTED_UPSTREAM_MESSAGE, iso, SYSTEM_ACTOR } from './tool-call-rows';

/** A `run_id` that can name one of our runs (a runtime outside names its own runs in any text), as the wake-up trigger reads it. */
const UUID_TEXT = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/**
 * What time does to calls and approvals, across organizations (the sweeper's statements, and an
 * expiry found while deciding): approvals past their expiry, calls whose process died.
 */
@Injectable()
export class ToolCallMaintenanceRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * Marks pending approvals past their expiry (all, or the given ones) and their calls `expired`,
   * with an `approval.expired` event each. Returns the expired approvals' call ids. The sweep skips
   * an approval a decision holds; given ids, it waits for that decision, so that an approval decided
   * at the last moment is not reported expired by the request that asked.
   */
  async expireApprovals(ids?: string[], batch = 500): Promise<{ orgId: string; callId: string }[]> {
    return this.dataSource.transaction(async (m) => {
      const [rows]: [{ id: string; org_id: string; tool_call_id: string; arguments_hash: string; expires_at: Date }[], number] = await m.query(
        `UPDATE approval SET status = 'expired'
          WHERE id IN (SELECT id FROM approval WHERE status = 'pending' AND expires_at <= now() ${ids ? 'AND id = ANY($2::uuid[])' : ''}
                        ORDER BY expires_at LIMIT $1 FOR UPDATE ${ids ? '' : 'SKIP LOCKED'})
            AND status = 'pending'
          RETURNING id, org_id, tool_call_id, arguments_hash, expires_at`,
        ids ? [batch, ids] : [batch],
      );
      if (rows.length === 0) return [];
      await lockCallsThenRuns(
        m,
        rows.map((r) => r.tool_call_id),
      );
      await m.query(
        `UPDATE tool_call SET status = 'expired', error_code = 'approval_expired', error_message = $2, completed_at = approval_expires_at
          WHERE id = ANY($1::uuid[]) AND status = 'pending_approval'`,
        [rows.map((r) => r.tool_call_id), EXPIRED_MESSAGE],
      );
      await this.audit.record(
        m,
        ...rows.map((r) => ({
          type: 'approval.expired' as const,
          orgId: r.org_id,
          actor: SYSTEM_ACTOR,
          target: { type: 'approval', id: r.id },
          data: { toolCallId: r.tool_call_id, argumentsHash: r.arguments_hash, expiresAt: iso(r.expires_at) },
        })),
      );
      return rows.map((r) => ({ orgId: r.org_id, callId: r.tool_call_id }));
    });
  }

  /**
   * Calls left `running` past their lease: the process that ran them died. They become `failed`
   * with code `interrupted` and are never run again by themselves; the message says whether the
   * tool may have acted (an MCP server's) or not (a built-in's writes were rolled back with it).
   */
  async interruptAbandoned(batch = 500): Promise<{ orgId: string; callId: string }[]> {
    return this.dataSource.transaction(async (m) => {
      const abandoned: { id: string }[] = await m.query(
        `SELECT id FROM tool_call WHERE status = 'running' AND lease_expires_at <= now()
          ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [batch],
      );
      if (abandoned.length === 0) return [];
      await lockCallsThenRuns(
        m,
        abandoned.map((r) => r.id),
      );
      const [rows]: [{ id: string; org_id: string; arguments_hash: string; executed_arguments_hash: string | null; agent_id: string; tool: string }[], number] =
        await m.query(
          `UPDATE tool_call SET status = 'failed', error_code = 'interrupted', completed_at = now(), lease_expires_at = NULL,
                  error_message = CASE WHEN capability_id = $4 THEN $3 ELSE $2 END
            WHERE id = ANY($1::uuid[]) AND status = 'running'
            RETURNING id, org_id, arguments_hash, executed_arguments_hash, agent_id, tool`,
          // 'mcp': MCP_CAPABILITY_ID (src/agents/mcp-version-tools.ts), the capability of every vendor's tool.
          [abandoned.map((r) => r.id), INTERRUPTED_MESSAGE, INTERRUPTED_UPSTREAM_MESSAGE, 'mcp'],
        );
      if (rows.length === 0) return [];
      await this.audit.record(
        m,
        ...rows.map((r) => ({
          type: 'tool_call.failed' as const,
          orgId: r.org_id,
          actor: SYSTEM_ACTOR,
          target: { type: 'tool_call', id: r.id },
          data: { agentId: r.agent_id, tool: r.tool, argumentsHash: r.executed_arguments_hash ?? r.arguments_hash, error: { code: 'interrupted' } },
        })),
      );
      return rows.map((r) => ({ orgId: r.org_id, callId: r.id }));
    });
  }
}

/**
 * Takes, in the sweep's transaction, the locks its settlement would take, in one order every sweep
 * shares: the calls, then their runs, each in id order. Settling a run's own call wakes the run (a
 * trigger updates its row, migrations 1764522600000 and 1764870000001), and a statement settles its rows in no order
 * it promises: two nodes sweeping two calls each of the same two runs (a step's parallel calls)
 * could each hold one run and wait for the other's. Calls before runs, as a decision takes them
 * (approval, call, run), so a sweep and a decision never wait on each other in a circle either.
 */
async function lockCallsThenRuns(m: EntityManager, callIds: readonly string[]): Promise<void> {
  await m.query(`SELECT id FROM tool_call WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [callIds]);
  await m.query(
    `SELECT r.id FROM run r
      WHERE r.id IN (SELECT c.run_id::uuid FROM tool_call c WHERE c.id = ANY($1::uuid[]) AND c.entry_point = 'run' AND c.run_id ~ '${UUID_TEXT}')
      ORDER BY r.id FOR UPDATE OF r`,
    [callIds],
  );
}
