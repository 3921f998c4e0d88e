import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { SAVED_URL_REFUSALS } from '../egress/egress.service';
import { PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import { ModelProvidersService } from './model-providers.service';
import { CreateModelProviderDto, ModelProviderPage, ModelProviderView, SetModelProviderApiKeyDto } from './runs.dto';

const NOT_FOUND = ProblemResponse('No such model provider in your organization (`not_found`).');

@ApiTags('runs')
@Controller('api/v1/model-providers')
export class ModelProvidersController {
  constructor(private readonly providers: ModelProvidersService) {}

  @Post()
  @Access('admin')
  @ApiOperation({
    summary: 'Add a model provider',
    description:
      'An OpenAI-compatible endpoint (Chat Completions with tools). The API key is stored encrypted and never answered again; `baseUrl` must pass the egress policy.',
  })
  @ApiCreatedResponse({ type: ModelProviderView })
  @ApiConflictResponse(ProblemResponse('The name is taken in this organization (`conflict`).'))
  @ApiBadRequestResponse(
    ProblemResponse(`The body is invalid (\`invalid_request\`; \`errors[]\` names each problem by \`path\`), or \`baseUrl\` is ${SAVED_URL_REFUSALS.invalid}.`),
  )
  @ApiUnprocessableEntityResponse(ProblemResponse(`\`baseUrl\` is ${SAVED_URL_REFUSALS.refused}; nothing stored.`))
  create(@Ctx() ctx: RequestContext, @Body() dto: CreateModelProviderDto): Promise<ModelProviderView> {
    return this.providers.create(ctx, dto);
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: "List the organization's model providers, newest first" })
  @ApiOkResponse({ type: ModelProviderPage })
  list(@Ctx() ctx: RequestContext, @Query() query: PageQuery) {
    return this.providers.list(ctx, query);
  }

  @Get(':id')
  @Access('viewer')
  @ApiOperation({ summary: 'Read a model provider (never its key)' })
  @ApiOkResponse({ type: ModelProviderView })
  @ApiNotFoundResponse(NOT_FOUND)
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<ModelProviderView> {
    return this.providers.get(ctx, id);
  }

  @Put(':id/api-key')
  @Access('admin')
  @ApiOperation({
    summary: 'Replace or remove the API key',
    description:
      'For a key rotated at the vendor (leaked, expired): the next model request of every run on this provider, on any node, sends the new key. `null` removes it. Audited (`model_provider.api_key_updated`, which never holds the key).',
  })
  @ApiOkResponse({ type: ModelProviderView })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiBadRequestResponse(ProblemResponse('`apiKey` is missing or malformed (`invalid_request` at `apiKey`); the value is never echoed.'))
  setApiKey(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: SetModelProviderApiKeyDto): Promise<ModelProviderView> {
    return this.providers.setApiKey(ctx, id, dto.apiKey);
  }

  @Delete(':id')
  @HttpCode(204)
  @Access('admin')
  @ApiOperation({ summary: 'Delete a model provider' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(ProblemResponse('A published version runs on it (`resource_in_use`).'))
  async delete(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<void> {
    await this.providers.delete(ctx, id);
  }
}
