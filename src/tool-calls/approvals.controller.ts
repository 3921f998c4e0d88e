import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { ApprovalDecisionView, ApprovalView, ApproveDto, ListApprovalsQuery, RejectDto } from './tool-calls.dto';
import { ApprovalDecision, ToolExecutor } from './tool-executor.service';
import { ToolCallsService } from './tool-calls.service';

const DECISION_REFUSALS = {
  notFound: ProblemResponse('No such approval in this organization (`not_found`).'),
  conflict: ProblemResponse('Decided already (`approval_already_decided`), or past `expiresAt` (`approval_expired`; it reads `expired` from then on).'),
  forbidden: ProblemResponse('`forbidden` (role), or the key that requested the call (`self_approval_forbidden`).'),
};

@ApiTags('approvals')
@Controller('api/v1/approvals')
export class ApprovalsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly calls: ToolCallsService,
  ) {}

  @Get()
  @Access('viewer', 'approver')
  @ApiOperation({ summary: 'List approvals, newest first', description: 'A pending approval past `expiresAt` reads (and filters) as `expired`.' })
  @ApiOkResponse({ description: '`{ items: Approval[], nextCursor }`', type: ApprovalView, isArray: true })
  list(@Ctx() ctx: RequestContext, @Query() query: ListApprovalsQuery) {
    return this.calls.listApprovals(orgIdOf(ctx), query);
  }

  @Get(':id')
  @Access('viewer', 'approver')
  @ApiOperation({ summary: 'Read an approval' })
  @ApiOkResponse({ type: ApprovalView })
  @ApiNotFoundResponse(DECISION_REFUSALS.notFound)
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<ApprovalView> {
    return this.calls.getApproval(orgIdOf(ctx), id);
  }

  @Post(':id/approve')
  @HttpCode(200)
  @Access('approver')
  @ApiOperation({
    summary: 'Approve, and run the call once',
    description: [
      'Runs exactly the stored arguments (their hash is checked again first; a mismatch is `409 approval_arguments_changed`',
      'and nothing runs), or the `arguments` given here, validated like the model\'s (`422 invalid_arguments`, the approval',
      'stays pending), kept beside the originals, with `argumentsEdited: true` on the call. Of any number of simultaneous',
      'approvals exactly one answers `200` and the tool runs once. The guards run again with the organization as it is now:',
      '`404 unknown_tool`, `409 tool_definition_changed`, `403 scope_not_granted` refuse and leave the approval pending.',
    ].join(' '),
  })
  @ApiOkResponse({ type: ApprovalDecisionView, description: 'The approval, and the call as it ran (`succeeded` or `failed`).' })
  @ApiNotFoundResponse(DECISION_REFUSALS.notFound)
  @ApiConflictResponse(DECISION_REFUSALS.conflict)
  @ApiForbiddenResponse(DECISION_REFUSALS.forbidden)
  @ApiUnprocessableEntityResponse(ProblemResponse('Edited arguments break the tool\'s input schema (`invalid_arguments`).'))
  approve(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: ApproveDto): Promise<ApprovalDecision> {
    return this.executor.approve(ctx, id, dto);
  }

  @Post(':id/reject')
  @HttpCode(200)
  @Access('approver')
  @ApiOperation({ summary: 'Reject; the call becomes `rejected`, its error message the reason' })
  @ApiOkResponse({ type: ApprovalDecisionView })
  @ApiNotFoundResponse(DECISION_REFUSALS.notFound)
  @ApiConflictResponse(DECISION_REFUSALS.conflict)
  @ApiForbiddenResponse(DECISION_REFUSALS.forbidden)
  reject(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: RejectDto): Promise<ApprovalDecision> {
    return this.executor.reject(ctx, id, dto.reason);
  }
}
