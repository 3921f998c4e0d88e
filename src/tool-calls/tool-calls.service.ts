import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { Page } from '../common/pagination';
import { ApprovalView, ListApprovalsQuery, ListToolCallsQuery, ToolCallResultView, ToolCallView } from './tool-calls.dto';
import { ApprovalsRepository } from './approvals.repository';
import { toApprovalView, toToolCallView } from './tool-call-rows';
import { ToolCallsRepository } from './tool-calls.repository';

/**
 * The most bytes of JSON a kept result is answered in: four times the 16 MiB characters a result
 * may be (MAX_RESULT_CHARS), so every result stored since is. A result stored before S-F1 could be
 * printed by the database as 656 MB, and reading that text ended the node (no string holds it).
 */
export const MAX_ANSWERED_RESULT_BYTES = 64 * 1024 * 1024;

/** The read side of tool calls and approvals; every read is of one organization. */
@Injectable()
export class ToolCallsService {
  constructor(
    private readonly store: ToolCallsRepository,
    private readonly approvals: ApprovalsRepository,
  ) {}

  /** `agents`: the agents a pinned key may read of (agentScopeOf); another's call is answered as missing. */
  async get(orgId: string, id: string, agents?: readonly string[]): Promise<ToolCallView> {
    const row = await this.store.findCall(orgId, id);
    if (!row || (agents && !agents.includes(row.agent_id))) throw ApiError.notFound('tool call');
    return toToolCallView(row);
  }

  list(orgId: string, query: ListToolCallsQuery, agents?: readonly string[]): Promise<Page<ToolCallView>> {
    return this.store.listCalls(orgId, { ...query, agents });
  }

  /**
   * The whole result as JSON text: the one shown when it was not cut, the one kept apart when it was
   * offloaded, as the database writes it (key order and spacing aside, the same JSON): parsed from its
   * row and written again, an 11.2 MB result held the event loop 337 to 568 ms a read (attack round 16, S-F3).
   */
  async result(orgId: string, id: string, agents?: readonly string[]): Promise<string> {
    const found = await this.store.findResult(orgId, id, MAX_ANSWERED_RESULT_BYTES, agents);
    if (!found) throw ApiError.notFound('tool call');
    const { row, wholeText } = found;
    if (row.status !== 'succeeded') {
      throw new ApiError('result_not_available', `The call is ${row.status}; only a succeeded call has a result.`);
    }
    if (wholeText === null) {
      throw new ApiError(
        'result_not_available',
        `The result kept is more than ${MAX_ANSWERED_RESULT_BYTES} bytes as JSON (stored before results holding numbers stored far longer than written were refused); only the cut result is answered.`,
      );
    }
    if (row.result_offloaded) return `{"toolCallId":${JSON.stringify(row.id)},"result":${wholeText}}`;
    if (row.result_truncated) {
      throw new ApiError(
        'result_not_available',
        "The result was cut to the tool's output budget and the tool does not keep large results; only the cut result exists.",
      );
    }
    return JSON.stringify({ toolCallId: row.id, result: row.result } satisfies ToolCallResultView);
  }

  async getApproval(orgId: string, id: string): Promise<ApprovalView> {
    const row = await this.approvals.findApproval(orgId, id);
    if (!row) throw ApiError.notFound('approval');
    return toApprovalView(row);
  }

  listApprovals(orgId: string, query: ListApprovalsQuery): Promise<Page<ApprovalView>> {
    return this.approvals.listApprovals(orgId, query);
  }
}
