import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { EXPIRED_MESSAGE, INTERRUPTED_MESSAGE, INTERRUPTED_UPSTREAM_MESSAGE, iso, SYSTEM_ACTOR } from './tool-call-rows';

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
      const [rows]: [{ id: string; org_id: string; arguments_hash: string; executed_arguments_hash: string | null; agent_id: string; tool: string }[], number] =
        await m.query(
          `UPDATE tool_call SET status = 'failed', error_code = 'interrupted', completed_at = now(), lease_expires_at = NULL,
                  error_message = CASE WHEN capability_id = $4 THEN $3 ELSE $2 END
            WHERE id IN (SELECT id FROM tool_call WHERE status = 'running' AND lease_expires_at <= now()
                          ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
              AND status = 'running'
            RETURNING id, org_id, arguments_hash, executed_arguments_hash, agent_id, tool`,
          // 'mcp': MCP_CAPABILITY_ID (src/agents/mcp-version-tools.ts), the capability of every vendor's tool.
          [batch, INTERRUPTED_MESSAGE, INTERRUPTED_UPSTREAM_MESSAGE, 'mcp'],
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
