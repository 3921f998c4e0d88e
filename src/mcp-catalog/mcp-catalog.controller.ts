import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
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
import { ApiError } from '../common/api-error';
import { HeldRequests } from '../common/held-requests';
import { ProblemResponse } from '../common/openapi';
import { SAVED_URL_REFUSALS } from '../egress/egress.service';
import { pageByKey, PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import { McpConnectionsService } from './connections/mcp-connections.service';
import {
  CreateMcpConnectionDto,
  McpConnectionPage,
  McpConnectionView,
  McpServerEntryList,
  McpServerEntryView,
  SetMcpCredentialsDto,
  SetMcpToolRiskDto,
  SetMcpUrlDto,
} from './mcp-catalog.dto';
import { McpServerRegistry } from './mcp-server-registry.service';

const NOT_FOUND = ProblemResponse('No such MCP connection in your organization (`not_found`).');

@ApiTags('mcp-catalog')
@Controller('api/v1/mcp-servers')
export class McpServersController {
  constructor(private readonly registry: McpServerRegistry) {}

  @Get()
  @Access('authenticated')
  @ApiOperation({
    summary: 'The MCP catalog: vendor servers the code base allows, sorted by id',
    description:
      'For an organization key each entry says whether the organization holds every scope it needs (`available`). Pages like every list (`limit`, `cursor`, `nextCursor`).',
  })
  @ApiOkResponse({ type: McpServerEntryList })
  list(@Ctx() ctx: RequestContext, @Query() query: PageQuery): McpServerEntryList {
    const granted = isOrgPrincipal(ctx.principal) ? new Set(ctx.principal.orgScopes) : undefined;
    const items: McpServerEntryView[] = this.registry.all().map(({ descriptor }) => ({
      ...descriptor,
      credentials: descriptor.credentials.map((c) => ({ ...c })),
      scopes: [...descriptor.scopes],
      ...(granted ? { available: descriptor.scopes.every((s) => granted.has(s)) } : {}),
    }));
    return pageByKey(items, query, (entry) => entry.id);
  }
}

/**
 * Listing a server's tools holds the request until the server answers (up to EGRESS_TIMEOUT_MS),
 * at an address an admin chose: such requests are held requests like streams (HeldRequests), or
 * one organization's admins listing a server that never answers held the node's connections.
 */
const LISTING_HELD = ProblemResponse(
  'The organization, or the server, holds as many requests open as it may (`HTTP_HELD_REQUESTS_PER_ORG`, `HTTP_HELD_REQUESTS_MAX`): `rate_limited` with `Retry-After`, nothing changed.',
);

@ApiTags('mcp-catalog')
@Controller('api/v1/mcp-connections')
export class McpConnectionsController {
  constructor(
    private readonly connections: McpConnectionsService,
    private readonly held: HeldRequests,
  ) {}

  @Post()
  @Access('admin')
  @ApiOperation({
    summary: 'Connect a catalog server',
    description: 'Connects, initializes and lists the tools (every page) before anything is stored. Credentials are encrypted at rest and never shown again.',
  })
  @ApiCreatedResponse({ type: McpConnectionView })
  @ApiBadRequestResponse(
    ProblemResponse(
      `Bad body, unknown server, unknown or missing credential, a url where the entry fixes it or none where it needs one (\`invalid_request\`); or \`url\` is ${SAVED_URL_REFUSALS.invalid}.`,
    ),
  )
  @ApiForbiddenResponse(ProblemResponse('Not an admin (`forbidden`), or the organization lacks a scope the entry needs (`scope_not_granted`).'))
  @ApiConflictResponse(ProblemResponse('The name is taken in the organization (`conflict`).'))
  @ApiUnprocessableEntityResponse(
    ProblemResponse(
      `\`url\` is ${SAVED_URL_REFUSALS.refused}; or the server could not be connected and listed (\`mcp_connect_failed\`, \`reason\` says why); nothing stored.`,
    ),
  )
  @ApiTooManyRequestsResponse(LISTING_HELD)
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateMcpConnectionDto): Promise<McpConnectionView> {
    return this.held.run(orgIdOf(ctx), () => this.connections.create(ctx, dto));
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: 'List MCP connections, newest first' })
  @ApiOkResponse({ type: McpConnectionPage })
  list(@Ctx() ctx: RequestContext, @Query() query: PageQuery) {
    return this.connections.list(orgIdOf(ctx), query);
  }

  @Get(':id')
  @Access('viewer')
  @ApiOperation({ summary: 'Read an MCP connection' })
  @ApiOkResponse({ type: McpConnectionView })
  @ApiNotFoundResponse(NOT_FOUND)
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<McpConnectionView> {
    return this.connections.get(orgIdOf(ctx), id);
  }

  @Post(':id/sync')
  @HttpCode(200)
  @Access('admin')
  @ApiOperation({
    summary: 'List the tools again',
    description:
      'The audit event names the tools added, removed and changed. A server that cannot be reached answers `status: "error"` with the last good tools kept. A node that cannot open the stored credentials or URL (sealed under a secrets key it does not hold) answers `500 internal_error` saying so and changes nothing.',
  })
  @ApiOkResponse({ type: McpConnectionView })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiTooManyRequestsResponse(LISTING_HELD)
  sync(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<McpConnectionView> {
    return this.held.run(orgIdOf(ctx), () => this.connections.sync(ctx, id));
  }

  @Put(':id/tools/:tool/risk')
  @Access('admin')
  @ApiOperation({ summary: "Set a tool's risk", description: "A person's decision; it is kept across syncs and wins over the server's annotations." })
  @ApiOkResponse({ type: McpConnectionView })
  @ApiNotFoundResponse(ProblemResponse('No such connection, or the connection lists no such tool (`not_found`).'))
  setRisk(
    @Ctx() ctx: RequestContext,
    @Param('id', UuidParam) id: string,
    @Param('tool') tool: string,
    @Body() dto: SetMcpToolRiskDto,
  ): Promise<McpConnectionView> {
    if (tool.length === 0 || tool.length > 128) throw ApiError.notFound('tool on this connection');
    return this.connections.setRisk(ctx, id, tool, dto.risk);
  }

  @Put(':id/credentials')
  @Access('admin')
  @ApiOperation({ summary: 'Replace the credentials', description: 'The next use of the connection opens a new client with them.' })
  @ApiOkResponse({ type: McpConnectionView })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiBadRequestResponse(ProblemResponse('An unknown, missing or malformed credential (`invalid_request`); the value is never echoed.'))
  setCredentials(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: SetMcpCredentialsDto): Promise<McpConnectionView> {
    return this.connections.setCredentials(ctx, id, dto.credentials);
  }

  @Put(':id/url')
  @Access('admin')
  @ApiOperation({
    summary: 'Move the connection to another URL',
    description:
      'For an entry whose URL the connection supplies (`urlRequired`), also while published versions bind it. The tools are listed at the new URL with the stored credentials (or the `credentials` given, which then replace them) first; a connection holding credentials moves to another origin only with `credentials` given (`{}` for none), since stored credentials are sent only to the origin they were given for: if that fails, `422 mcp_connect_failed` and nothing changes. Then the URL and the tools are stored together, as a sync stores them (the audit event `mcp_connection.url_updated` names the tools added, removed and changed); calls use the new address from then on, on every node.',
  })
  @ApiOkResponse({ type: McpConnectionView })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiBadRequestResponse(
    ProblemResponse(
      `Bad body, or an entry whose address the catalog fixes (\`invalid_request\`, \`not_allowed\` at \`url\`); or \`url\` is ${SAVED_URL_REFUSALS.invalid}; or \`url\` is of another origin and the connection holds credentials while \`credentials\` is not given (\`required\` at \`credentials\`), or a credential is unknown or malformed (its value never echoed).`,
    ),
  )
  @ApiUnprocessableEntityResponse(
    ProblemResponse(
      `\`url\` is ${SAVED_URL_REFUSALS.refused}; or the server there could not be connected and listed (\`mcp_connect_failed\`, \`reason\` says why); nothing changed.`,
    ),
  )
  @ApiTooManyRequestsResponse(LISTING_HELD)
  setUrl(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: SetMcpUrlDto): Promise<McpConnectionView> {
    return this.held.run(orgIdOf(ctx), () => this.connections.setUrl(ctx, id, dto.url, dto.credentials));
  }

  @Delete(':id')
  @HttpCode(204)
  @Access('admin')
  @ApiOperation({ summary: 'Delete an MCP connection; refused while a published version binds it' })
  @ApiNoContentResponse({ description: 'Deleted; its client (and process) on this node stopped.' })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(ProblemResponse('A published agent version binds the connection (`resource_in_use`; `boundBy` lists them).'))
  async delete(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<void> {
    await this.connections.delete(ctx, id);
  }
}
