import { Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { AGENT_NOT_FOUND } from './agents.controller';
import { VersionParam } from './version-param.pipe';
import {
  AgentVersionPage,
  AgentVersionView,
  AnthropicToolView,
  ManifestQuery,
  ManifestView,
  OfferedToolPage,
  OfferedToolView,
  OpenAiToolView,
  ToolsQuery,
  ValidationResultView,
  VersionsQuery,
} from './versions.dto';
import { VersionsService } from './versions.service';

const VERSION_NOT_FOUND = ProblemResponse('No such agent in your organization, or no such version (`not_found`).');
const NOT_PUBLISHED = ProblemResponse('The agent has no published version (`not_published`).');
const SCOPE_LOST = ProblemResponse(
  'The role does not allow it (`forbidden`), or the organization no longer holds a scope a contributing capability needs (`scope_not_granted`); `missingScopes` names them.',
);
const VERSION_PARAM = ApiParam({
  name: 'version',
  description: 'A version number, or `latest`.',
  schema: {
    oneOf: [
      { type: 'integer', minimum: 1 },
      { type: 'string', enum: ['latest'] },
    ],
  },
});

@ApiTags('agents')
@ApiExtraModels(OfferedToolView, OpenAiToolView, AnthropicToolView)
@Controller('api/v1/agents/:agentId')
export class VersionsController {
  constructor(private readonly versions: VersionsService) {}

  @Post('draft/validate')
  @HttpCode(200)
  @Access('builder')
  @ApiOperation({ summary: 'Check whether the draft could be published', description: 'Every problem is listed, each with its `code` and `path`.' })
  @ApiOkResponse({ type: ValidationResultView })
  @ApiNotFoundResponse(AGENT_NOT_FOUND)
  validate(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string): Promise<ValidationResultView> {
    return this.versions.validateDraft(ctx, agentId);
  }

  @Post('publish')
  @Access('builder')
  @ApiOperation({
    summary: 'Publish the draft as a new immutable version',
    description:
      "The normalized spec (config defaults filled in) is stored with its hash and the digest of every offered tool. When the normalized draft and every tool digest equal the latest version's, nothing is created and the answer is `200` with that version. The content of an older version is published again as a new version (a rollback). What is published is the draft as it stands when the version is written: a draft saved while the publish checked it is checked and published instead.",
  })
  @ApiCreatedResponse({ type: AgentVersionView, description: 'A new version.' })
  @ApiOkResponse({ type: AgentVersionView, description: 'Nothing changed: the latest version.' })
  @ApiNotFoundResponse(AGENT_NOT_FOUND)
  @ApiConflictResponse(
    ProblemResponse(
      "The organization's agents would pass `AGENTS_MAX_BYTES_PER_ORG`, or the draft was saved again three times while it was being published (`conflict`); nothing was published.",
    ),
  )
  @ApiUnprocessableEntityResponse(ProblemResponse('The draft cannot be published (`spec_invalid`); `errors[]` lists every problem with its `code` and `path`.'))
  async publish(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<AgentVersionView> {
    const { created, version } = await this.versions.publish(ctx, agentId);
    void reply.status(created ? 201 : 200);
    return version;
  }

  @Get('versions')
  @Access('viewer', 'agent')
  @ApiOperation({ summary: 'List published versions, newest first' })
  @ApiOkResponse({ type: AgentVersionPage })
  @ApiNotFoundResponse(AGENT_NOT_FOUND)
  list(@Ctx() ctx: RequestContext, @Param('agentId', UuidParam) agentId: string, @Query() query: VersionsQuery) {
    return this.versions.list(ctx, agentId, query);
  }

  @Get('versions/:version')
  @Access('viewer', 'agent')
  @VERSION_PARAM
  @ApiOperation({ summary: 'Read a published version, with the drift of its tools since publish' })
  @ApiOkResponse({ type: AgentVersionView })
  @ApiNotFoundResponse(VERSION_NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  get(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Param('version', VersionParam) version: number | 'latest',
  ): Promise<AgentVersionView> {
    return this.versions.get(ctx, agentId, version);
  }

  @Post('versions/:version/retire')
  @HttpCode(200)
  @Access('builder')
  @VERSION_PARAM
  @ApiOperation({
    summary: 'Retire a version: calls to it are refused from then on',
    description: [
      'For when an older version must not run any more (it lacks a rule a later version added: an agent key could',
      'otherwise call `version: N` to skip it). Every call of the retired version, at every entry point (tool calls,',
      'approvals being granted, MCP, runs), is `409 version_retired` and nothing runs. The latest version cannot be',
      'retired (`409 conflict`): publish a newer one first. Audited as `agent.version_retired`. Retiring a retired',
      'version answers it as it stands.',
    ].join(' '),
  })
  @ApiOkResponse({ type: AgentVersionView })
  @ApiNotFoundResponse(VERSION_NOT_FOUND)
  @ApiConflictResponse(ProblemResponse('The latest version cannot be retired (`conflict`), or the agent has no published version (`not_published`).'))
  retire(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Param('version', VersionParam) version: number | 'latest',
  ): Promise<AgentVersionView> {
    return this.versions.retire(ctx, agentId, version);
  }

  @Get('versions/:version/tools')
  @Access('viewer', 'agent')
  @VERSION_PARAM
  @ApiOperation({
    summary: 'The tools the model is offered',
    description:
      "Overrides applied; `requiresApproval` includes the spec's `toolApproval`. `format` renders them for a provider. A page at a time like every list, in the order they are offered; the manifest holds them all at once.",
  })
  @ApiOkResponse({ type: OfferedToolPage })
  @ApiNotFoundResponse(VERSION_NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  @ApiForbiddenResponse(SCOPE_LOST)
  tools(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Param('version', VersionParam) version: number | 'latest',
    @Query() query: ToolsQuery,
  ) {
    return this.versions.tools(ctx, agentId, version, query);
  }

  @Get('versions/:version/manifest')
  @Access('viewer', 'agent')
  @VERSION_PARAM
  @ApiOperation({
    summary: 'Everything a runtime needs: system prompt, offered tools, settings',
    description: '`profile` and `workerType` narrow it to the capabilities that apply to that worker: their prompt guidance, settings and tools.',
  })
  @ApiOkResponse({ type: ManifestView })
  @ApiNotFoundResponse(VERSION_NOT_FOUND)
  @ApiConflictResponse(NOT_PUBLISHED)
  @ApiForbiddenResponse(SCOPE_LOST)
  manifest(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Param('version', VersionParam) version: number | 'latest',
    @Query() query: ManifestQuery,
  ): Promise<ManifestView> {
    return this.versions.manifest(ctx, agentId, version, { profile: query.profile, workerType: query.workerType });
  }
}
