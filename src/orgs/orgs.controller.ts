import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import { ApiKeyPage, ApiKeyPolicyDto, ApiKeyPolicyView, CreateApiKeyDto, CreatedApiKeyView, CreateOrgDto, OrgPage, OrgView, UpdateScopesDto } from './orgs.dto';
import { OrgsService } from './orgs.service';
import { UsageView } from './usage.dto';

@ApiTags('organizations')
@Controller('api/v1/orgs')
export class OrgsController {
  constructor(private readonly orgs: OrgsService) {}

  @Post()
  @Access('platform')
  @ApiOperation({ summary: 'Create an organization' })
  @ApiCreatedResponse({ type: OrgView })
  @ApiConflictResponse(ProblemResponse('The slug is taken (`conflict`).'))
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateOrgDto): Promise<OrgView> {
    return this.orgs.create(ctx, dto);
  }

  @Get()
  @Access('platform')
  @ApiOperation({ summary: 'List organizations, by slug' })
  @ApiOkResponse({ type: OrgPage })
  list(@Query() query: PageQuery): Promise<OrgPage> {
    return this.orgs.list(query);
  }

  @Get(':orgId')
  @Access('platform', 'authenticated')
  @ApiOperation({ summary: 'Read an organization (platform admin, or any key of that organization)' })
  @ApiOkResponse({ type: OrgView })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  get(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string): Promise<OrgView> {
    return this.orgs.get(ctx, orgId);
  }

  @Put(':orgId/scopes')
  @Access('platform')
  @ApiOperation({ summary: 'Replace the scopes granted to an organization' })
  @ApiOkResponse({ type: OrgView })
  @ApiNotFoundResponse(ProblemResponse('No such organization (`not_found`).'))
  updateScopes(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string, @Body() dto: UpdateScopesDto): Promise<OrgView> {
    return this.orgs.updateScopes(ctx, orgId, dto.scopes);
  }

  @Post(':orgId/api-keys')
  @Access('platform', 'admin')
  @ApiOperation({ summary: 'Create an API key; the answer is the only time its token is shown' })
  @ApiCreatedResponse({ type: CreatedApiKeyView })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  @ApiConflictResponse(ProblemResponse('The organization holds 1,000 keys that are neither revoked nor expired (`conflict`); revoke one first.'))
  @ApiTooManyRequestsResponse(
    ProblemResponse(
      'The organization made `API_KEYS_CREATED_PER_DAY` keys (default 1,000) in the last 24 hours, revoked and expired ones included (`rate_limited`); `Retry-After` says when the next may be made.',
    ),
  )
  createKey(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string, @Body() dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    return this.orgs.createKey(ctx, orgId, dto);
  }

  @Get(':orgId/api-key-policy')
  @Access('platform', 'admin')
  @ApiOperation({ summary: 'The longest a new API key of the organization may live' })
  @ApiOkResponse({ type: ApiKeyPolicyView })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  keyPolicy(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string): Promise<ApiKeyPolicyView> {
    return this.orgs.keyPolicy(ctx, orgId);
  }

  @Put(':orgId/api-key-policy')
  @Access('platform', 'admin')
  @ApiOperation({
    summary: 'Bound how long new API keys of the organization may live',
    description:
      'A key made from now on without `expiresAt` expires `maxLifetimeDays` after it is made, and one asking for later is `400` at `expiresAt`; keys made before keep their expiry (revoke them to apply it). Audited `org.api_key_policy_updated`.',
  })
  @ApiOkResponse({ type: ApiKeyPolicyView })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  setKeyPolicy(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string, @Body() dto: ApiKeyPolicyDto): Promise<ApiKeyPolicyView> {
    return this.orgs.setKeyPolicy(ctx, orgId, dto);
  }

  @Get(':orgId/api-keys')
  @Access('platform', 'admin')
  @ApiOperation({ summary: "List the organization's API keys (never their tokens)" })
  @ApiOkResponse({ type: ApiKeyPage })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  listKeys(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string, @Query() query: PageQuery): Promise<ApiKeyPage> {
    return this.orgs.listKeys(ctx, orgId, query);
  }

  @Get(':orgId/usage')
  @Access('platform', 'admin')
  @ApiOperation({
    summary: 'What the organization holds of each bound it is held to',
    description:
      'Knowledge, agents and runs in bytes as their bounds count them, skills and API keys (not revoked) in number; each with its bound and the setting that sets it.',
  })
  @ApiOkResponse({ type: UsageView })
  @ApiNotFoundResponse(ProblemResponse('No such organization, or not yours (`not_found`).'))
  usage(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string): Promise<UsageView> {
    return this.orgs.usage(ctx, orgId);
  }

  @Delete(':orgId/api-keys/:keyId')
  @HttpCode(204)
  @Access('platform', 'admin')
  @ApiOperation({
    summary: 'Revoke an API key; it is refused from its next request on',
    description:
      'In the same transaction, the agent runs it started that have not finished fail (`error.code` `unauthorized`) and their pending approvals are rejected, with a note naming the run and the cause; deciding one later answers `409 approval_already_decided`. A tool call the key asked for itself over REST or MCP stays pending for an approver to decide.',
  })
  @ApiNoContentResponse({ description: 'Revoked.' })
  @ApiNotFoundResponse(ProblemResponse('No such key in this organization (`not_found`).'))
  async revokeKey(@Ctx() ctx: RequestContext, @Param('orgId', UuidParam) orgId: string, @Param('keyId', UuidParam) keyId: string): Promise<void> {
    await this.orgs.revokeKey(ctx, orgId, keyId);
  }
}
