import { Body, Controller, Get, Param, Post, Put, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiCreatedResponse, ApiExtraModels, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import { AgentPage, AgentSpecDto, AgentView, CreateAgentDto, ToolOverrideDto } from './agents.dto';
import { AgentsService } from './agents.service';

export const AGENT_NOT_FOUND = ProblemResponse('No such agent in your organization (`not_found`).');

@ApiTags('agents')
@ApiExtraModels(ToolOverrideDto)
@Controller('api/v1/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Post()
  @Access('builder')
  @ApiOperation({ summary: 'Create an agent with an empty draft' })
  @ApiCreatedResponse({ type: AgentView })
  @ApiConflictResponse(ProblemResponse('The slug is taken in this organization (`conflict`).'))
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateAgentDto): Promise<AgentView> {
    return this.agents.create(ctx, dto);
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: 'List agents, by slug' })
  @ApiOkResponse({ type: AgentPage })
  list(@Ctx() ctx: RequestContext, @Query() query: PageQuery) {
    return this.agents.list(orgIdOf(ctx), query);
  }

  @Get(':agentId')
  @Access('viewer')
  @ApiOperation({ summary: 'Read an agent and its draft' })
  @ApiOkResponse({ type: AgentView })
  @ApiNotFoundResponse(AGENT_NOT_FOUND)
  get(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string): Promise<AgentView> {
    return this.agents.get(orgIdOf(ctx), agentId);
  }

  @Put(':agentId/draft')
  @Access('builder')
  @ApiOperation({
    summary: 'Replace the draft',
    description: 'Only the shape is checked (`400 invalid_request`); a draft may be unpublishable. `draft/validate` says why.',
  })
  @ApiOkResponse({ type: AgentView })
  @ApiNotFoundResponse(AGENT_NOT_FOUND)
  replaceDraft(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string, @Body() dto: AgentSpecDto): Promise<AgentView> {
    return this.agents.replaceDraft(ctx, agentId, dto);
  }
}
