import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { PrincipalList, PrincipalsQuery } from './principals.dto';
import { PrincipalsRepository } from './principals.repository';

/**
 * Records name who acted by id (a key's, or a UUID derived from a person's issuer and `sub`); this
 * says who that is, so the console shows `support-bot runtime` or `alice@example.com` rather than
 * an id. Keys' names only, never their roles or prefixes (the key list stays the admins').
 */
@ApiTags('organizations')
@Controller('api/v1/principals')
export class PrincipalsController {
  constructor(private readonly principals: PrincipalsRepository) {}

  @Get()
  @Access('viewer')
  @ApiOperation({
    summary: "Name the organization's keys and people that records hold by id",
    description: 'Ids of another organization, and unknown ones, are left out of `items`.',
  })
  @ApiOkResponse({ type: PrincipalList })
  async list(@Ctx() ctx: RequestContext, @Query() query: PrincipalsQuery): Promise<PrincipalList> {
    return { items: await this.principals.named(orgIdOf(ctx), query.ids) };
  }
}
