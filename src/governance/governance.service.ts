import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { actingKeyOf, actorOf, isOrgPrincipal, OrgPrincipal, RequestContext } from '../auth/principal';
import { holdActingKey, turnTransaction } from '../database/org-limit';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import { findAgentWith } from '../agents/agents.repository';
import { versionExists } from '../agents/agent-versions.repository';
import { ApiError } from '../common/api-error';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf, PageQuery } from '../common/pagination';
import { DisabledToolRow, GovernanceRepository, holdSwitches, RetirementRow } from './governance.repository';
import { ToolSwitchView } from './governance.dto';

/**
 * An MCP tool's id: `<connection name>/<tool name>` (API.md "MCP catalog"). The tool's part is the
 * server's name as stored, which may hold any character but U+0000 (a tab, U+0001): refusing
 * control characters here left such a tool offered, called and impossible to disable (attack round 10).
 */
// eslint-disable-next-line no-control-regex -- U+0000 is the one character no stored name holds, and PostgreSQL cannot store
const MCP_TOOL_ID = /^[a-z0-9][a-z0-9-]{1,62}\/[^\u0000]{1,200}$/;

/**
 * Switches and retirements of one organization take their turns on the node (turnTransaction):
 * they serialize on its switches' lock, and 100 at once held the pool's connections waiting for it
 * (attack round 21, AE-N1).
 */
const SWITCH_TURNS = 'switches';

/**
 * Incident response: retiring a version and disabling a tool. Both are recorded with their audit
 * event in one transaction, and both are read by the tool policy at every entry point that runs a
 * tool; a switch checked only by one route would be a hole.
 */
@Injectable()
export class GovernanceService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: GovernanceRepository,
    private readonly registry: CapabilityRegistry,
    private readonly audit: AuditService,
  ) {}

  /**
   * Retires a published version: calls to it are `409 version_retired` from then on. The latest
   * version cannot be retired (`409 conflict`): "latest" must always name something that runs;
   * publish another version first. Retiring a retired version answers it as it stands.
   */
  async retire(ctx: RequestContext, agentId: string, version: number | 'latest'): Promise<RetirementRow> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    return turnTransaction(this.dataSource, SWITCH_TURNS, orgId, async (m) => {
      await holdSwitches(m, orgId, 'switch');
      // The agent row is locked so that a publish cannot make this version the latest's
      // predecessor between the check and the insert, nor the other way round.
      const agent = await findAgentWith(m, orgId, agentId, true);
      // A switch waits for the decisions under way: not past its key's revocation (holdActingKey).
      await holdActingKey(m, orgId, actingKeyOf(principal));
      if (!agent) throw ApiError.notFound('agent');
      const latest = agent.latest_version;
      if (latest === null) throw ApiError.conflict('The agent has no published version.', 'not_published');
      const v = version === 'latest' ? latest : version;
      if (!(await versionExists(m, orgId, agentId, v))) throw ApiError.notFound('agent version');
      if (v === latest) {
        throw ApiError.conflict(`Version ${v} is the latest version and cannot be retired; publish a newer version first.`);
      }
      const { row, created } = await this.repository.retire(m, orgId, agentId, v, principal.id);
      if (created) {
        await this.audit.record(m, {
          type: 'agent.version_retired',
          orgId,
          actor: actorOf(principal),
          target: { type: 'agent', id: agentId },
          data: { agentId, version: v },
        });
      }
      return row;
    });
  }

  /** Sorted by capability id, then tool id; the cursor is the pair last answered, so a page boundary survives switches in between. */
  async listDisabled(ctx: RequestContext, query: PageQuery): Promise<Page<ToolSwitchView>> {
    const after = decodeCursor(query.cursor, ['text', 'text']) as [string, string] | undefined;
    const limit = query.limit ?? DEFAULT_LIMIT;
    const orgId = keyOf(ctx).orgId;
    const rows = await this.repository.disabledToolsPage(orgId, after, limit + 1);
    const listed = await this.repository.listedMcpTools(
      orgId,
      rows.filter((r) => r.capability_id === 'mcp').map((r) => r.tool_id),
    );
    return pageOf(
      rows.map((r) => toSwitchView(r, r.capability_id !== 'mcp' || listed.has(r.tool_id))),
      limit,
      (v) => [v.capabilityId, v.toolId],
      (v) => v,
    );
  }

  /** Disables or enables one tool for the organization; audited only when the state changes. */
  async setDisabled(ctx: RequestContext, capabilityId: string, toolId: string, body: { disabled: boolean; reason?: string }): Promise<ToolSwitchView> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    this.assertKnownTool(capabilityId, toolId);
    const listed = async (m: EntityManager) => capabilityId !== 'mcp' || (await this.repository.listedMcpTools(orgId, [toolId], m)).has(toolId);
    return turnTransaction(this.dataSource, SWITCH_TURNS, orgId, async (m) => {
      const actor = actorOf(principal);
      const target = { type: 'tool', id: `${capabilityId}/${toolId}` };
      if (body.disabled) {
        await holdSwitches(m, orgId, 'switch');
        await holdActingKey(m, orgId, actingKeyOf(principal));
        const { row, change, previousReason } = await this.repository.disable(m, orgId, capabilityId, toolId, body.reason ?? null, principal.id);
        // A new reason for a tool already off is recorded too: it is what every refused caller reads.
        if (change) {
          const data = { capabilityId, toolId, reason: body.reason ?? null, ...(change === 'reason' ? { previousReason } : {}) };
          await this.audit.record(m, { type: 'tool.disabled', orgId, actor, target, data });
        }
        return toSwitchView(row, await listed(m));
      }
      const enabled = await this.repository.enable(m, orgId, capabilityId, toolId);
      await holdActingKey(m, orgId, actingKeyOf(principal));
      if (enabled) {
        await this.audit.record(m, {
          type: 'tool.enabled',
          orgId,
          actor,
          target,
          data: { capabilityId, toolId, ...(body.reason ? { reason: body.reason } : {}) },
        });
      }
      return { capabilityId, toolId, disabled: false, reason: null, disabledAt: null, disabledBy: null, listed: await listed(m) };
    });
  }

  /** A tool the code declares (or, for `mcp`, an id shaped like one): anything else is 404 unknown_tool. */
  private assertKnownTool(capabilityId: string, toolId: string): void {
    if (capabilityId === 'mcp') {
      if (MCP_TOOL_ID.test(toolId)) return;
    } else if (this.registry.get(capabilityId)?.tools.some((t) => t.declaration.id === toolId)) {
      return;
    }
    throw new ApiError('unknown_tool', `No capability "${capabilityId}" declares a tool "${toolId}".`);
  }
}

function toSwitchView(row: DisabledToolRow, listed: boolean): ToolSwitchView {
  return {
    capabilityId: row.capability_id,
    toolId: row.tool_id,
    disabled: true,
    reason: row.reason,
    disabledAt: new Date(row.disabled_at).toISOString(),
    disabledBy: row.disabled_by,
    listed,
  };
}

function keyOf(ctx: RequestContext): OrgPrincipal {
  if (!isOrgPrincipal(ctx.principal)) throw ApiError.forbidden("Only an organization's API key or member acts on its agents and tools.");
  return ctx.principal;
}
