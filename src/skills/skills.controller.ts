import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiCreatedResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { actingKeyOf, orgIdOf, RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { CreateSkillDto, SkillPage, SkillsQuery, SkillView } from './skills.dto';
import { SkillsRepository } from './skills.repository';

const NOT_FOUND = ProblemResponse('No such skill in your organization (`not_found`).');

@ApiTags('skills')
@Controller('api/v1/skills')
export class SkillsController {
  constructor(private readonly skills: SkillsRepository) {}

  @Post()
  @Access('builder')
  @ApiOperation({ summary: 'Create a skill' })
  @ApiCreatedResponse({ type: SkillView })
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateSkillDto): Promise<SkillView> {
    return this.skills.create(orgIdOf(ctx), dto, actingKeyOf(ctx.principal));
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: 'List skills, newest first' })
  @ApiOkResponse({ type: SkillPage })
  list(@Ctx() ctx: RequestContext, @Query() query: SkillsQuery) {
    return this.skills.list(orgIdOf(ctx), query);
  }

  @Get(':id')
  @Access('viewer')
  @ApiOperation({ summary: 'Read a skill' })
  @ApiOkResponse({ type: SkillView })
  @ApiNotFoundResponse(NOT_FOUND)
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<SkillView> {
    return this.skills.get(orgIdOf(ctx), id);
  }

  @Delete(':id')
  @HttpCode(204)
  @Access('builder')
  @ApiOperation({ summary: 'Delete a skill; refused while a published version binds it' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(ProblemResponse('A published agent version binds the skill (`resource_in_use`; `boundBy` lists them).'))
  async delete(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<void> {
    await this.skills.delete(orgIdOf(ctx), id, actingKeyOf(ctx.principal));
  }
}
