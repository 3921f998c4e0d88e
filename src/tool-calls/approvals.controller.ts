import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { isOrgPrincipal, orgIdOf, RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { ApprovalDecisionView, ApprovalPage, ApprovalView, ApproveDto, ListApprovalsQuery, RejectDto } from './tool-calls.dto';
import { ApprovalDecision, ToolApprovals } from '../runtime/tool-approvals.service';
import { ToolCallsService } from './tool-calls.service';
import { ToolCallsInFlight } from '../runtime/tool-calls-in-flight';

const DECISION_REFUSALS = {
  notFound: ProblemResponse('No such approval in this organization (`not_found`).'),
  conflict: ProblemResponse('Decided already (`approval_already_decided`), or past `expiresAt` (`approval_expired`; it reads `expired` from then on).'),
  approveConflict: ProblemResponse(
    "Decided already (`approval_already_decided`); past `expiresAt` (`approval_expired`; it reads `expired` from then on); the tool's definition changed or the code removed it since publish (`tool_definition_changed`); the stored arguments no longer match the approval's hash (`approval_arguments_changed`).",
  ),
  forbidden: ProblemResponse('`forbidden` (role), or the key that requested the call (`self_approval_forbidden`).'),
  approveForbidden: ProblemResponse(
    '`forbidden` (role), the key that requested the call (`self_approval_forbidden`), or the organization no longer holds a scope the tool needs (`scope_not_granted`).',
  ),
};

@ApiTags('approvals')
@Controller('api/v1/approvals')
export class ApprovalsController {
  constructor(
    private readonly approvals: ToolApprovals,
    private readonly calls: ToolCallsService,
    private readonly inFlight: ToolCallsInFlight,
  ) {}

  @Get()
  @Access('viewer', 'approver')
  @ApiOperation({ summary: 'List approvals, newest first', description: 'A pending approval past `expiresAt` reads (and filters) as `expired`.' })
  @ApiOkResponse({ type: ApprovalPage })
  list(@Ctx() ctx: RequestContext, @Query() query: ListApprovalsQuery): Promise<ApprovalPage> {
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
      "and nothing runs; a vendor's schema whose check of them cannot answer now, past its time, is `422 invalid_arguments`, still pending),",
      "or the `arguments` given here, validated like the model's (`422 invalid_arguments`, the approval",
      'stays pending), kept beside the originals, with `argumentsEdited: true` on the call. Of any number of simultaneous',
      'approvals exactly one answers `200` and the tool runs once. The guards run again with the organization as it is now:',
      '`409 tool_definition_changed` (the code changed or removed the tool since publish), `403 scope_not_granted` refuse and leave the approval pending.',
    ].join(' '),
  })
  @ApiOkResponse({ type: ApprovalDecisionView, description: 'The approval, and the call as it ran (`succeeded` or `failed`).' })
  @ApiNotFoundResponse(DECISION_REFUSALS.notFound)
  @ApiConflictResponse(DECISION_REFUSALS.approveConflict)
  @ApiForbiddenResponse(DECISION_REFUSALS.approveForbidden)
  @ApiUnprocessableEntityResponse(ProblemResponse("Edited arguments break the tool's input schema (`invalid_arguments`)."))
  @ApiTooManyRequestsResponse(
    ProblemResponse(
      'The organization has `TOOL_CALLS_IN_FLIGHT_PER_ORG` tool calls in progress on the server (`rate_limited`, `Retry-After`); nothing decided, the approval stays pending.',
    ),
  )
  approve(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: ApproveDto): Promise<ApprovalDecision> {
    // An approved call runs in this request, as one asked for over REST does: it counts among them.
    if (!isOrgPrincipal(ctx.principal)) return this.approvals.approve(ctx, id, dto);
    return this.inFlight.run(ctx.principal.orgId, () => this.approvals.approve(ctx, id, dto));
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
    return this.approvals.reject(ctx, id, dto.reason);
  }
}
