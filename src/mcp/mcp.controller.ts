import { Body, Controller, Delete, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { McpQuery } from './mcp.dto';
import { McpService } from './mcp.service';

const NOT_FOUND = ProblemResponse('No such agent in this organization, or no such version (`not_found`).');
const NOT_PUBLISHED = ProblemResponse('The agent has no published version (`not_published`).');
const INVALID_QUERY = ProblemResponse('`version` is not a positive integer, or the query names something unknown (`invalid_request`).');

/**
 * The MCP endpoint of an agent (Streamable HTTP, stateless). Authentication, roles and the
 * agent's organization are checked first, as for every route, and refused with problem
 * documents; only then does MCP (JSON-RPC) start. See docs/mcp.md.
 */
@ApiTags('mcp')
@Controller('api/v1/agents/:agentId/mcp')
export class McpController {
  constructor(private readonly mcp: McpService) {}

  @Post()
  @Access('agent')
  @ApiOperation({
    summary: "Send MCP messages to the agent's MCP server",
    description: [
      'A Streamable HTTP endpoint of the Model Context Protocol, served statelessly (no `Mcp-Session-Id`), speaking the',
      '2026-07-28 revision (`server/discover`, the per-request `_meta` envelope) and the 2025 ones (`initialize`) on the',
      "same URL: the agent's name, the version, and the version's system prompt as `instructions`; `tools/list` (the",
      "version's offered tools, with annotations from their risk and declaration, and `outputSchema` where declared) and",
      '`tools/call` (through the same executor, guards, records and',
      'audit as `POST /agents/{agentId}/tool-calls`, with entry point `mcp`). Requests are answered as JSON-RPC over',
      '`text/event-stream`; notifications and responses with `202`. A call that needs approval waits up to',
      '`MCP_APPROVAL_WAIT_SECONDS` for a decision (at most `MCP_HELD_CALLS_PER_ORG` of an organization at once on a server;',
      'past it the call is answered at once as still waiting), with progress notifications when the request carries a',
      '`progressToken`; still undecided, the result names the approval, and the same call with the same arguments made',
      'again hands over the decision instead of asking again. A 2026-07-28 client that declares the Tasks extension gets',
      'a task at once instead, followed with `tasks/get` (the task id is the tool call id). Errors of the JSON-RPC layer (a malformed message, a',
      'missing `Accept`) are JSON-RPC errors, not problem documents.',
    ].join('\n'),
  })
  @ApiBody({ description: 'One JSON-RPC 2.0 message. A batch (an array) is refused with JSON-RPC error -32600 and HTTP 400.', schema: { type: 'object' } })
  @ApiForbiddenResponse(
    ProblemResponse('The request carries an `Origin` that is neither loopback nor in `MCP_ALLOWED_ORIGINS` (`origin_not_allowed`, DNS rebinding protection).'),
  )
  @ApiOkResponse({
    description: 'The JSON-RPC responses (and progress notifications) as server-sent events.',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiAcceptedResponse({ description: 'Only notifications or responses were sent; nothing to answer.' })
  @ApiBadRequestResponse(INVALID_QUERY)
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  async post(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Query() query: McpQuery,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    this.mcp.assertOrigin(req);
    const target = await this.mcp.resolve(ctx, agentId, query.version);
    await this.mcp.serve(ctx, target, req, reply, body);
  }

  @Get()
  @Access('agent')
  @ApiOperation({
    summary: 'Open a server-to-client event stream (not offered)',
    description:
      'The endpoint is stateless: it has nothing to send outside the answer to a request, so it offers no stream. `405` with `Allow: POST`, as MCP specifies.',
  })
  @ApiResponse({ status: 405, ...ProblemResponse('Not offered by a stateless endpoint (`method_not_allowed`).') })
  @ApiBadRequestResponse(INVALID_QUERY)
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  async stream(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string, @Query() query: McpQuery): Promise<never> {
    await this.mcp.resolve(ctx, agentId, query.version);
    throw notOffered('A stateless MCP endpoint sends nothing outside the answer to a request, so it offers no event stream.');
  }

  @Delete()
  @Access('agent')
  @ApiOperation({
    summary: 'End an MCP session (there are none)',
    description: 'The endpoint is stateless: there is no session to end. `405` with `Allow: POST`, as MCP specifies.',
  })
  @ApiResponse({ status: 405, ...ProblemResponse('No sessions on a stateless endpoint (`method_not_allowed`).') })
  @ApiBadRequestResponse(INVALID_QUERY)
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  async end(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string, @Query() query: McpQuery): Promise<never> {
    await this.mcp.resolve(ctx, agentId, query.version);
    throw notOffered('A stateless MCP endpoint keeps no session, so there is none to end.');
  }
}

function notOffered(detail: string): ApiError {
  return new ApiError('method_not_allowed', detail, undefined, undefined, { Allow: 'POST' });
}
