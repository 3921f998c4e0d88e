import { Controller, Get, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { isOrgPrincipal, RequestContext } from '../auth/principal';
import { ApiQueryOf, ProblemResponse } from '../common/openapi';
import { validQuery } from '../common/validation';
import { CatalogAnswers } from './catalog-answers';
import { CapabilityRegistry } from './capability-registry.service';
import { CapabilityListView, CapabilityQuery } from './capabilities.dto';

@ApiTags('capabilities')
@Controller('api/v1/agents/capabilities')
export class CapabilitiesController {
  /** Made at the first request: the registry is complete only once every module is initialized. */
  private answers?: CatalogAnswers;

  constructor(private readonly registry: CapabilityRegistry) {}

  @Get()
  @Access('authenticated')
  @ApiOperation({
    summary: 'The capability catalog, sorted by id, a page at a time like every list',
    description:
      'Computed once at boot from the code. For an organization key each item says whether the organization holds every scope it needs (`available`). Answers carry an `ETag`; send it back in `If-None-Match` to get `304` while nothing changed.',
  })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'An ETag from an earlier answer.' })
  @ApiOkResponse({
    type: CapabilityListView,
    headers: { ETag: { description: 'Identifies this answer (it differs per organization because of `available`).', schema: { type: 'string' } } },
  })
  @ApiResponse({ status: 304, description: 'Not modified: the answer would equal the one named by `If-None-Match`.' })
  @ApiBadRequestResponse(ProblemResponse('An unknown filter, or a bad filter value (`invalid_request`).'))
  @ApiQueryOf(CapabilityQuery)
  list(@Ctx() ctx: RequestContext, @Res() reply: FastifyReply): void {
    // The query is validated here, by the function the global pipe uses for every `@Query()` class
    // (the same refusals, the same cache of valid queries), not through Nest's parameter pipes: that
    // path (an async resolver, the pipe consumer, the pipe) cost this route about 4 µs of its
    // answer, 5% of its requests per second (docs/benchmarks.md, issue 21).
    const query = validQuery(CapabilityQuery, reply.request.query);
    const grantedScopes = isOrgPrincipal(ctx.principal) ? ctx.principal.orgScopes : undefined;
    const { limit, cursor, ...filter } = query;
    const { body, etag } = (this.answers ??= new CatalogAnswers(this.registry.catalog())).answer(filter, grantedScopes, { limit, cursor });
    void reply
      .header('ETag', etag)
      // The answer depends on the caller's organization (`available`): shared caches must keep them apart.
      .header('Cache-Control', 'private, no-cache')
      .header('Vary', 'Authorization');
    if (etagMatches(reply.request.headers['if-none-match'], etag)) {
      void reply.status(304).send();
      return;
    }
    void reply.status(200).type('application/json; charset=utf-8').send(body);
  }
}

/** RFC 9110 13.1.2: weak comparison, a list of tags, or `*`. */
function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}
