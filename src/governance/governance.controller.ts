import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { PageQuery } from '../common/pagination';
import { SetToolDisabledDto, ToolSwitchPage, ToolSwitchView } from './governance.dto';
import { GovernanceService } from './governance.service';

/** The organization-wide kill switch per tool, for incident response. */
@ApiTags('tools')
@Controller('api/v1/tools')
export class GovernanceController {
  constructor(private readonly governance: GovernanceService) {}

  @Get('disabled')
  @Access('viewer')
  @ApiOperation({
    summary: 'The tools disabled in this organization',
    description: 'Sorted by capability id, then tool id, in code point order. Pages like every list (`limit`, `cursor`, `nextCursor`).',
  })
  @ApiOkResponse({ type: ToolSwitchPage })
  listDisabled(@Ctx() ctx: RequestContext, @Query() query: PageQuery): Promise<ToolSwitchPage> {
    return this.governance.listDisabled(ctx, query);
  }

  @Put(':capabilityId/:toolId/disabled')
  @Access('admin')
  @ApiOperation({
    summary: 'Disable (or enable again) a tool for the whole organization',
    description: [
      'While disabled, every call of the tool, in every agent and every version, at every entry point (the tool-call',
      'endpoint, an approval being granted, MCP, runs), is refused with `403 tool_disabled` and nothing runs. Audited as',
      "`tool.disabled` / `tool.enabled` when the state changes. An MCP tool's `toolId` is `<connection>/<tool>`,",
      'URL-encoded (`%2F`). Repeating a request answers the state as it stands.',
    ].join(' '),
  })
  @ApiParam({ name: 'capabilityId', description: 'A capability id from the catalog, or `mcp`.' })
  @ApiParam({ name: 'toolId', description: "The tool's id in its capability (for `mcp`: `<connection>/<tool>`, URL-encoded)." })
  @ApiOkResponse({ type: ToolSwitchView })
  @ApiForbiddenResponse(ProblemResponse('Only an admin may switch tools (`forbidden`).'))
  @ApiNotFoundResponse(ProblemResponse('No capability declares that tool (`unknown_tool`).'))
  @ApiConflictResponse(ProblemResponse('The organization already has 1,000 tools disabled, the most it may (`conflict`); enable some first.'))
  setDisabled(
    @Ctx() ctx: RequestContext,
    @Param('capabilityId') capabilityId: string,
    @Param('toolId') toolId: string,
    @Body() body: SetToolDisabledDto,
  ): Promise<ToolSwitchView> {
    return this.governance.setDisabled(ctx, capabilityId, toolId, body);
  }
}
