import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Access, ReadsAgentWithKey } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { agentScopeOf, orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { CreateToolCallDto, ListToolCallsQuery, ToolCallPage, ToolCallResultView, ToolCallView } from './tool-calls.dto';
import { ToolCallsService } from './tool-calls.service';
import { ToolExecutor } from '../runtime/tool-executor.service';
import { ToolCallsInFlight } from '../runtime/tool-calls-in-flight';

// API.md: 1..255 characters. Printable ASCII, spaces included (HTTP trims them at either end);
// other bytes in a header value have no agreed meaning.
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

@ApiTags('tool calls')
@Controller('api/v1')
export class ToolCallsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly calls: ToolCallsService,
    private readonly inFlight: ToolCallsInFlight,
  ) {}

  @Post('agents/:agentId/tool-calls')
  @Access('agent')
  @ReadsAgentWithKey('agentId')
  @ApiOperation({
    summary: 'Call a tool of a published version, through every guard',
    description: [
      'Guards, in this order: the version offers the tool (`404 unknown_tool`); its definition is the one pinned at publish',
      '(`409 tool_definition_changed`, also for a tool the version was published with that the code no longer has); the organization holds every scope its capability needs (`403 scope_not_granted`);',
      'the limits capabilities contribute per `runId` (`429 budget_exceeded`; without `runId` no per-run limit applies;',
      "a call that passes the guards counts, whatever it then does); the arguments against the tool's input schema",
      '(`422 invalid_arguments`, paths like `arguments.query`); then the approval gate. Every refusal is audited as',
      '`tool_call.denied` and nothing runs.',
      '',
      "A tool that is `mutating` or `destructive`, declares `interruptBefore`, or that the spec's `toolApproval` requires",
      'is not run: the call and its approval are stored, bound to the SHA-256 of the canonical JSON of the validated',
      'arguments, and the answer is `202` with `approvalId`. Otherwise the tool runs with a timeout (`TOOL_TIMEOUT_MS`,',
      "default 30000; its abort signal fires then and the call fails with `error.code` `timeout`). A tool's own failure",
      "is `200` with `status: failed` and `error`. A result over the tool's `maxOutputTokens` (o200k tokens of its JSON",
      'text) is cut to that many tokens, as text, with `resultTruncated: true`; with `offloadLargeResults` the whole',
      'result is kept and `resultRef` names it.',
      '',
      '`Idempotency-Key` (1..255 printable ASCII characters, kept 24 hours per organization): the same key with the same',
      'body answers the first answer again (same status and body, header `Idempotent-Replayed: true`) and runs nothing;',
      'another body `422 idempotency_key_reused`; the first request still in progress `409 idempotency_in_progress`.',
      'A request refused before anything was recorded (any 4xx above) does not keep its key.',
    ].join('\n'),
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: '1..255 printable ASCII characters.' })
  @ApiOkResponse({ type: ToolCallView, description: 'It ran: `succeeded`, or `failed` with `error`.' })
  @ApiAcceptedResponse({ type: ToolCallView, description: 'It waits for approval: `pending_approval` with `approvalId`; nothing ran.' })
  @ApiBadRequestResponse(ProblemResponse('The body or the Idempotency-Key header is malformed (`invalid_request`).'))
  @ApiNotFoundResponse(ProblemResponse('No such agent or version (`not_found`), or the version offers no such tool (`unknown_tool`).'))
  @ApiConflictResponse(
    ProblemResponse(
      '`not_published`, `tool_definition_changed` or `idempotency_in_progress`; or `conflict`: the organization stores `RUNS_MAX_BYTES_PER_ORG` and the arguments weigh more than 2,048 characters (nothing recorded).',
    ),
  )
  @ApiForbiddenResponse(ProblemResponse('`forbidden` (role), or `scope_not_granted` (the organization lost a scope the capability needs).'))
  @ApiTooManyRequestsResponse(
    ProblemResponse(
      'A per-run limit contributed by a capability is reached (`budget_exceeded`), or the organization has `TOOL_CALLS_IN_FLIGHT_PER_ORG` calls in progress on the server, or, for a call that would wait for approval, `APPROVALS_MAX_PENDING_PER_ORG` approvals waiting (`rate_limited`, `Retry-After`; nothing recorded).',
    ),
  )
  @ApiUnprocessableEntityResponse(ProblemResponse('`invalid_arguments` with `errors[]`, or `idempotency_key_reused`.'))
  async create(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Body() dto: CreateToolCallDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ToolCallView> {
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw ApiError.invalidRequest([
        { path: 'Idempotency-Key', code: 'invalid_header', message: 'Idempotency-Key must be 1..255 printable ASCII characters' },
      ]);
    }
    const outcome = await this.inFlight.run(orgIdOf(ctx), () =>
      this.executor.request(ctx, {
        agentId,
        tool: dto.tool,
        arguments: dto.arguments,
        version: dto.version,
        runId: dto.runId,
        entryPoint: 'rest',
        idempotencyKey,
      }),
    );
    reply.status(outcome.status);
    if (outcome.replayed) reply.header('Idempotent-Replayed', 'true');
    return outcome.call;
  }

  @Get('tool-calls')
  @Access('viewer', 'agent')
  @ApiOperation({
    summary: "List the organization's tool calls, newest first",
    description: 'Filters combine with AND. A pending call whose approval has expired reads (and filters) as `expired`.',
  })
  @ApiOkResponse({ type: ToolCallPage })
  list(@Ctx() ctx: RequestContext, @Query() query: ListToolCallsQuery): Promise<ToolCallPage> {
    return this.calls.list(orgIdOf(ctx), query, agentScopeOf(ctx.principal));
  }

  @Get('tool-calls/:id')
  @Access('viewer', 'agent')
  @ApiOperation({ summary: 'Read a tool call' })
  @ApiOkResponse({ type: ToolCallView })
  @ApiNotFoundResponse(ProblemResponse('No such tool call in this organization (`not_found`).'))
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<ToolCallView> {
    return this.calls.get(orgIdOf(ctx), id, agentScopeOf(ctx.principal));
  }

  @Get('tool-calls/:id/result')
  @Access('viewer', 'agent')
  @ApiOperation({
    summary: 'Read the whole result of a succeeded call',
    description: 'For a result cut to the output budget, the whole one exists only when the tool offloads large results.',
  })
  @ApiOkResponse({ type: ToolCallResultView })
  @ApiNotFoundResponse(
    ProblemResponse('No such tool call (`not_found`), or it has no whole result: not succeeded, or cut without offloading (`result_not_available`).'),
  )
  result(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    // JSON text made by the database (up to 16 MiB), sent as it is.
    void reply.type('application/json; charset=utf-8');
    return this.calls.result(orgIdOf(ctx), id, agentScopeOf(ctx.principal));
  }
}
