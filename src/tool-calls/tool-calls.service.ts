import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { Page } from '../common/pagination';
import { ApprovalView, ListApprovalsQuery, ListToolCallsQuery, ToolCallResultView, ToolCallView } from './tool-calls.dto';
import { ApprovalsRepository } from './approvals.repository';
import { toApprovalView, toToolCallView } from './tool-call-rows';
import { ToolCallsRepository } from './tool-calls.repository';

/** The read side of tool calls and approvals; every read is of one organization. */
@Injectable()
export class ToolCallsService {
  constructor(
    private readonly store: ToolCallsRepository,
    private readonly approvals: ApprovalsRepository,
  ) {}

  async get(orgId: string, id: string): Promise<ToolCallView> {
    const row = await this.store.findCall(orgId, id);
    if (!row) throw ApiError.notFound('tool call');
    return toToolCallView(row);
  }

  list(orgId: string, query: ListToolCallsQuery): Promise<Page<ToolCallView>> {
    return this.store.listCalls(orgId, query);
  }

  /** The whole result: the one shown when it was not cut, the one kept apart when it was offloaded. */
  async result(orgId: string, id: string): Promise<ToolCallResultView> {
    const found = await this.store.findResult(orgId, id);
    if (!found) throw ApiError.notFound('tool call');
    const { row, whole } = found;
    if (row.status !== 'succeeded') {
      throw new ApiError('result_not_available', `The call is ${row.status}; only a succeeded call has a result.`);
    }
    if (row.result_offloaded) return { toolCallId: row.id, result: whole };
    if (row.result_truncated) {
      throw new ApiError(
        'result_not_available',
        "The result was cut to the tool's output budget and the tool does not keep large results; only the cut result exists.",
      );
    }
    return { toolCallId: row.id, result: row.result };
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
